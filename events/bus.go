package events

import "context"

// Bus delivers events. Publish returns once the event is durably accepted
// (for JetStreamBus: acknowledged by the stream) or fails; publishing the
// same write twice (same MsgID) must be harmless, because the ledger
// retries and relays.
type Bus interface {
	Publish(ctx context.Context, e Event) error
}

// BusFunc adapts a function to Bus, for tests, examples and in-process
// fan-out.
type BusFunc func(ctx context.Context, e Event) error

// Publish calls f.
func (f BusFunc) Publish(ctx context.Context, e Event) error { return f(ctx, e) }
