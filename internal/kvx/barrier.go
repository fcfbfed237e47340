package kvx

import (
	"context"

	"github.com/nats-io/nats.go"
)

// Barrier writes an empty value to key and returns once the stream has
// acknowledged it. Only a stream leader that can reach a quorum
// acknowledges a write, and a leader has every committed write of the
// stream when its own write commits, so a leader read (Last) made after
// Barrier returns sees every write acknowledged before Barrier was
// called.
//
// It exists for answers a leader read cannot be trusted with on its
// own: a leader cut off from its quorum keeps answering reads from its
// last state until it notices and steps down (seconds), so "no such key"
// from it may be false for a key written on the majority meanwhile. Its
// writes cannot commit, so there Barrier fails (an unknown outcome,
// within the caller's bound) instead of confirming the stale answer.
// key is the caller's: one key per bucket, overwritten every time, kept
// out of the caller's own key space.
func (b *Bucket) Barrier(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	_, err := b.send(ctx, &nats.Msg{Subject: b.Subject(key)}, cond{})
	return err
}
