package kvx

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Durable creates (or updates to cfg) the durable consumer cfg.Durable on
// stream. Each request is bounded by perTry, and one whose answer did not
// come within it (lost while a stream or meta leader moves, say) is sent
// again for as long as ctx lives: creating a durable with the same
// configuration is idempotent, so a repeat cannot make a second one.
// Without the bound a lost answer would hold the caller for all of ctx.
func Durable(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig, perTry time.Duration) (jetstream.Consumer, error) {
	if perTry <= 0 {
		// Every try would end at once and the loop spin until ctx does.
		perTry = DefaultOpTimeout
	}
	for {
		tctx, cancel := context.WithTimeout(ctx, perTry)
		cons, err := js.CreateOrUpdateConsumer(tctx, stream, cfg)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return cons, err
		}
	}
}
