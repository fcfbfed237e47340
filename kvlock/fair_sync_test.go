package kvlock_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

// retryHook is a slog handler that runs fn on the Locker's first
// "transient error, retrying" line.
type retryHook struct {
	fn    func()
	once  sync.Once
	fired chan struct{}
	// breaker counts the circuit breaker's moves.
	breaker atomic.Int32
}

func (h *retryHook) Enabled(context.Context, slog.Level) bool { return true }
func (h *retryHook) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *retryHook) WithGroup(string) slog.Handler            { return h }
func (h *retryHook) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "kvlock: circuit breaker" {
		h.breaker.Add(1)
	}
	if r.Message == "kvlock: transient error, retrying" {
		h.once.Do(func() {
			h.fn()
			close(h.fired)
		})
	}
	return nil
}

// A fair Acquire's first view sync starts the manager's watch. When
// creating its consumer outlasts the try's bound (the hub's start bound,
// the handle's DefaultTimeout, 5 s; on a loaded R3 cluster it once did,
// in TestClusterR3CASPaths), the sync
// is tried again within the caller's ctx instead of failing the Acquire
// with "queue of ...: kvx: watch: context deadline exceeded".
func TestFairAcquireRetriesSlowViewStart(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out nats.go's 5 s consumer-create bound")
	}
	n := natstest.WithServer(t)
	p, js := natstest.ThroughProxy(t, n)
	// Every server->client byte arrives 5.5 s late: the view's first read
	// (the queue's last ticket) still answers within OpTimeout, the watch's
	// consumer create does not (5 s). The first retry lifts the delay.
	hook := &retryHook{fn: func() { p.SetDelay(0) }, fired: make(chan struct{})}
	// One counted failure would open the breaker: the sync's tries are
	// reads, which it must not count.
	cfg := kvlock.Config{Fair: true, OpTimeout: 8 * time.Second, Logger: slog.New(hook),
		Breaker: kvlock.BreakerPolicy{Failures: 1, CoolDown: time.Minute}}
	l := newLocker(t, js, cfg)
	ctx := natstest.Context(t, 40*time.Second)

	p.SetDelay(5500 * time.Millisecond)
	t.Cleanup(func() { p.SetDelay(0) })
	k, err := l.Acquire(ctx, "slow-view")
	require.NoError(t, err)
	natstest.WaitClosed(t, hook.fired, time.Second, "the view's sync was retried")
	require.Zero(t, hook.breaker.Load(), "the sync's timed-out try opened the breaker: it counted a read as a failure")
	require.NoError(t, k.Release(ctx))
}
