package kvx

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultOpTimeout bounds one operation when the JetStream handle states
// no default timeout of its own.
const DefaultOpTimeout = 5 * time.Second

// OpTimeoutOf is the bound of one operation made through js without a
// deadline: the handle's default timeout, else DefaultOpTimeout.
func OpTimeoutOf(js jetstream.JetStream) time.Duration {
	if d := js.Options().DefaultTimeout; d > 0 {
		return d
	}
	return DefaultOpTimeout
}
