package kvx

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Layout is what a bucket's stream keeps per key (History) and
// republishes (RePublish): the two settings a layer that reads a bucket's
// stream as a log depends on.
type Layout struct {
	History   int64
	RePublish *jetstream.RePublish
}

// Layout reads the bucket's current layout from its stream.
func (b *Bucket) Layout(ctx context.Context) (Layout, error) {
	s, err := b.js.Stream(ctx, b.stream)
	if err != nil {
		return Layout{}, fmt.Errorf("kvx: stream %q: %w", b.stream, err)
	}
	c := s.CachedInfo().Config
	return Layout{History: c.MaxMsgsPerSubject, RePublish: c.RePublish}, nil
}

// SetLayout updates the bucket's stream to l (the server allows both
// changes on a live stream; kvledger's server facts test pins it). It
// needs the right to update the stream.
func (b *Bucket) SetLayout(ctx context.Context, l Layout) error {
	s, err := b.js.Stream(ctx, b.stream)
	if err != nil {
		return fmt.Errorf("kvx: stream %q: %w", b.stream, err)
	}
	c := s.CachedInfo().Config
	c.MaxMsgsPerSubject, c.RePublish = l.History, l.RePublish
	if _, err := b.js.UpdateStream(ctx, c); err != nil {
		return fmt.Errorf("kvx: update stream %q: %w", b.stream, err)
	}
	return nil
}
