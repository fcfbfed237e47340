package kvx

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// ticketTTL is how long a ticket message stays: only its revision
// matters, and the server's minimum TTL is one second.
const ticketTTL = time.Second

// Ticket publishes an empty message to key, unconditionally, with a
// one-second TTL, and returns its revision: a number no other Ticket (or
// any other write to the bucket) gets, and greater than every revision
// acknowledged before the call. It is a sequencer: concurrent callers are
// ordered by their arrival at the stream, and none of them can lose a
// race, since nothing is compared. Errors are mapped like every other
// write's.
func (b *Bucket) Ticket(ctx context.Context, key string) (uint64, error) {
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	return b.send(ctx, &nats.Msg{Subject: b.Subject(key)}, cond{ttl: ticketTTL})
}
