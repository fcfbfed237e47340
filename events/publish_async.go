package events

import "context"

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
// publish of the message Publish sends.
func (b *JetStreamBus) PublishAsync(e Event) func(context.Context) error {
	msg, err := b.message(e)
	if err != nil {
		return func(context.Context) error { return err }
	}
	f, err := b.js.PublishMsgAsync(msg)
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
			return publishError(e, context.Cause(ctx))
		}
	}
}
