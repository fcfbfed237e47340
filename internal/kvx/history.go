package kvx

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Stored is one message of the bucket's stream as stored: its entry,
// and its subject and headers, which a watcher's entries do not carry.
type Stored struct {
	Entry
	Subject string
	Header  map[string][]string
}

// History calls fn for every message the stream still holds for key,
// oldest first (markers included), through one ephemeral consumer that
// is deleted once it has delivered what was pending when it started (the
// server removes it after a short inactivity if the delete is lost).
func (b *Bucket) History(ctx context.Context, key string, fn func(Stored) bool) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	c, err := b.js.CreateConsumer(ctx, b.stream, jetstream.ConsumerConfig{
		FilterSubject:     b.Subject(key),
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: 30 * time.Second,
		MemoryStorage:     true,
	})
	if err != nil {
		return fmt.Errorf("kvx: history of %q: %w", key, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), OpTimeoutOf(b.js))
		defer cancel()
		_ = b.js.DeleteConsumer(dctx, b.stream, c.CachedInfo().Name)
	}()
	pending := int(c.CachedInfo().NumPending) // as the create answered
	// A consumer just created on a replicated stream may not be answering
	// yet: an empty fetch answered "no responders" is tried again on the
	// policy single writes get (noResponders), the ceiling stated there.
	l := noResponders.Start(ctx)
	for pending > 0 && l.Next() {
		batch, err := c.Fetch(min(pending, 256), jetstream.FetchContext(ctx))
		if err != nil {
			return fmt.Errorf("kvx: history of %q: %w", key, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("kvx: history of %q: %w", key, err)
			}
			s := Stored{Subject: m.Subject(), Header: m.Headers(),
				Entry: Entry{Key: key, Value: m.Data(), Revision: meta.Sequence.Stream, Op: opOf(m.Headers()), Created: meta.Timestamp,
					MsgID: m.Headers().Get(jetstream.MsgIDHeader)}}
			if !fn(s) {
				return nil
			}
		}
		if err := batch.Error(); err != nil {
			if n == 0 && noResponders.Transient(err) && !l.Last() {
				continue
			}
			return fmt.Errorf("kvx: history of %q: %w", key, err)
		}
		if n == 0 {
			return fmt.Errorf("kvx: history of %q: %d messages pending, none delivered", key, pending)
		}
		l.NoPause()
		pending -= n
	}
	if pending > 0 {
		return fmt.Errorf("kvx: history of %q: %d messages not delivered: %w", key, pending, cmp.Or(l.Err(), nats.ErrNoResponders))
	}
	return nil
}
