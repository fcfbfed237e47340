package kvx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Stored is one message of the bucket's stream as stored: its headers
// included, which a watcher's entries do not carry.
type Stored struct {
	Subject  string
	Header   map[string][]string
	Data     []byte
	Revision uint64
	Entry    Entry
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
	for attempt := 0; pending > 0; {
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
			s := Stored{Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), Revision: meta.Sequence.Stream,
				Entry: Entry{Key: key, Value: m.Data(), Revision: meta.Sequence.Stream, Op: opOf(m.Headers()), Created: meta.Timestamp,
					MsgID: m.Headers().Get(jetstream.MsgIDHeader)}}
			if !fn(s) {
				return nil
			}
		}
		if err := batch.Error(); err != nil {
			// A consumer just created on a replicated stream may not be
			// answering yet: a few bounded retries, as for a publish.
			if n == 0 && errors.Is(err, nats.ErrNoResponders) && attempt < noResponderAttempts {
				attempt++
				if err := Backoff(ctx, attempt); err != nil {
					return fmt.Errorf("kvx: history of %q: %w", key, err)
				}
				continue
			}
			return fmt.Errorf("kvx: history of %q: %w", key, err)
		}
		if n == 0 {
			return fmt.Errorf("kvx: history of %q: %d messages pending, none delivered", key, pending)
		}
		pending -= n
	}
	return nil
}
