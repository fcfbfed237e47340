package kvx

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/retry"
)

// Idempotent runs req, a request that may be sent any number of times
// with one effect (a read, or creating a stream or durable consumer with
// a fixed configuration), bounding each try by perTry and sending it
// again when a try went unanswered, for as long as ctx lives. Without the
// bound one answer lost while a stream or meta leader moves would hold
// the caller for all of ctx. A ctx without a deadline gets
// idempotentTries tries (so the call still ends, within
// idempotentTries × perTry). A perTry <= 0 is DefaultOpTimeout (every try
// would otherwise end at once). The loop is a retry.Policy without pauses:
// an unanswered try has already waited perTry.
func Idempotent(ctx context.Context, perTry time.Duration, req func(ctx context.Context) error) error {
	if perTry <= 0 {
		perTry = DefaultOpTimeout
	}
	p := retry.Policy{PerTry: perTry, Transient: func(err error) bool {
		return ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) // this try unanswered, ctx still alive
	}}
	if _, bounded := ctx.Deadline(); !bounded {
		p.Tries = idempotentTries
	}
	return p.Do(ctx, req)
}

// idempotentTries is Idempotent's ceiling for a ctx that cannot time out.
const idempotentTries = 3

// Durable creates (or updates to cfg) the durable consumer cfg.Durable on
// stream, an Idempotent request: creating a durable with the same
// configuration again cannot make a second one.
func Durable(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig, perTry time.Duration) (jetstream.Consumer, error) {
	var cons jetstream.Consumer
	err := Idempotent(ctx, perTry, func(ctx context.Context) (err error) {
		cons, err = js.CreateOrUpdateConsumer(ctx, stream, cfg)
		return err
	})
	return cons, err
}
