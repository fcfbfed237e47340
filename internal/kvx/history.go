package kvx

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// History returns the messages the bucket still keeps of key, oldest
// first, markers included: as many as the bucket's History setting (a
// bucket with History 1 keeps only the last). A key with no message
// returns none and no error.
//
// It first reads key's last message from the stream leader and then reads
// the key's subject through one ordered consumer up to that revision, so
// the answer is at least as new as every write acknowledged before the
// call, also when the consumer is served by a lagging replica. The
// consumer ends with the call.
func (b *Bucket) History(ctx context.Context, key string) ([]Entry, error) {
	last, err := b.Last(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cons, err := b.js.OrderedConsumer(ctx, b.stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{b.Subject(key)}})
	if err != nil {
		return nil, fmt.Errorf("kvx: history %q: %w", key, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("kvx: history %q: %w", key, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	var out []Entry
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return nil, fmt.Errorf("kvx: history %q: %w", key, err)
		}
		e, err := b.EntryOfMsg(m)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		if e.Revision >= last.Revision {
			return out, nil
		}
	}
}
