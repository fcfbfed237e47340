package events

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// AsyncPublisher is an optional Bus capability: PublishAsync sends e and
// returns without waiting for the bus to accept it, so the caller can do
// other work meanwhile. wait then blocks until the event is accepted and
// returns what Publish would have returned (a failed send is published
// again by Publish, which the de-duplication id makes harmless); it may
// be called once, bounded by its ctx, or never (the event may then be
// lost, as after a crash, and is recovered like one).
type AsyncPublisher interface {
	PublishAsync(e Event) (wait func(ctx context.Context) error)
}

var _ AsyncPublisher = (*JetStreamBus)(nil)

// PublishAsync implements AsyncPublisher with a JetStream asynchronous
// publish carrying the same headers as Publish.
func (b *JetStreamBus) PublishAsync(e Event) func(context.Context) error {
	data, err := Marshal(e)
	if err != nil {
		return func(context.Context) error { return err }
	}
	msg := &nats.Msg{Subject: b.prefix + string(e.Name), Data: data}
	f, err := b.js.PublishMsgAsync(msg, jetstream.WithMsgID(MsgID(e)), jetstream.WithExpectStream(b.stream))
	if err != nil {
		return func(ctx context.Context) error { return b.Publish(ctx, e) }
	}
	return func(ctx context.Context) error {
		select {
		case <-f.Ok():
			return nil
		case <-f.Err():
			return b.Publish(ctx, e)
		case <-ctx.Done():
			return fmt.Errorf("events: publish %s %q revision %d: %w", e.Name, e.Key, e.Revision, context.Cause(ctx))
		}
	}
}
