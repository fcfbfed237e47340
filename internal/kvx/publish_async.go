package kvx

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// UpdateAsyncAs is UpdateAs sent without waiting for the stream's
// acknowledgment: the compare-and-set leaves at once, and wait (called
// once, bounded by its ctx) returns what UpdateAs would have: the new
// revision, ErrConflict for a lost race, an outcome-unknown error
// (OutcomeUnknown) when no answer came within ctx. Several such writes
// can be in flight on one connection, each with its own acknowledgment,
// so a caller pipelines independent compare-and-sets instead of waiting
// one round trip each; unlike an atomic batch, one write's lost race
// refuses only that write. The fence is the same as UpdateAs's: the
// server checks rev when the message arrives.
//
// It rides on the JetStream context's asynchronous publisher (one reply
// subscription per connection, owned by nats.go, acknowledgments decoded
// by nats.go), so it adds no goroutine of its own.
func (b *Bucket) UpdateAsyncAs(key string, value []byte, rev uint64, ttl time.Duration, id string) (wait func(context.Context) (uint64, error)) {
	if err := CheckKey(key); err != nil {
		return func(context.Context) (uint64, error) { return 0, err }
	}
	c := casCond(rev, ttl, id)
	m := &nats.Msg{Subject: b.Subject(key), Data: value}
	if err := b.prepare(m, c); err != nil {
		return func(context.Context) (uint64, error) { return 0, err }
	}
	f, err := b.js.PublishMsgAsync(m)
	if err != nil {
		// Not sent (the asynchronous publisher refused it): the awaited
		// path, with the same id, so a copy that did leave is
		// de-duplicated by the stream.
		return func(ctx context.Context) (uint64, error) {
			return b.UpdateAs(ctx, key, value, rev, ttl, id)
		}
	}
	return func(ctx context.Context) (uint64, error) {
		select {
		case ack := <-f.Ok():
			return ack.Sequence, nil
		case err := <-f.Err():
			return 0, mapErr(err)
		case <-ctx.Done():
			// Sent and not answered: it may yet land.
			return 0, fmt.Errorf("kvx: write %q: %w", key, context.Cause(ctx))
		}
	}
}
