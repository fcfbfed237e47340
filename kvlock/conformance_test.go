package kvlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
	"github.com/natscoord/natscoord/kvlock/locktest"
)

// The NATS Locker and the in-process Memory pass the same suite.

func TestConformanceNATS(t *testing.T) {
	locktest.Run(t, locktest.Harness{
		New: func(t *testing.T, cfg kvlock.Config) kvlock.Service {
			n := natstest.WithServer(t)
			return newLocker(t, n.JS, cfg).Service()
		},
	})
}

func TestConformanceMemoryRealClock(t *testing.T) {
	locktest.Run(t, locktest.Harness{
		New: func(t *testing.T, cfg kvlock.Config) kvlock.Service {
			m, err := kvlock.NewMemory(cfg)
			require.NoError(t, err)
			return m
		},
	})
}

func TestConformanceMemoryManualClock(t *testing.T) {
	var clock *kvlock.ManualClock
	locktest.Run(t, locktest.Harness{
		New: func(t *testing.T, cfg kvlock.Config) kvlock.Service {
			clock = kvlock.NewManualClock(time.Time{})
			m, err := kvlock.NewMemory(cfg, kvlock.WithClock(clock))
			require.NoError(t, err)
			return m
		},
		Advance: func(d time.Duration) { clock.Advance(d) },
	})
}
