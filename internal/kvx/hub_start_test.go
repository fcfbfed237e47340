package kvx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// stalledHub returns a hub of a bucket bound through a proxy (jsOpts
// apply to its JetStream handle), with the proxy stalled: the server gets
// every request, and answers none the client sees, as a hung server or a
// silent network path leaves it.
func stalledHub(t *testing.T, n *natstest.Node, jsOpts ...jetstream.JetStreamOpt) (*kvx.Hub, *natstest.DelayProxy, *kvx.Bucket) {
	t.Helper()
	p, js := natstest.ThroughProxy(t, n, jsOpts...)
	b := openBucket(t, js, 1)
	h := b.NewHub(">")
	t.Cleanup(func() { _ = h.Close() })
	p.Stall(true)
	t.Cleanup(func() { p.Stall(false) })
	return h, p, b
}

// subscribeInBackground subscribes to "k" in a goroutine, within 20 s,
// and sends Subscribe's error (the Sub it got closed at once).
func subscribeInBackground(t *testing.T, h *kvx.Hub) <-chan error {
	errc := make(chan error, 1)
	go func() {
		s, err := h.Subscribe(natstest.Context(t, 20*time.Second), "k")
		if err == nil {
			s.Close()
		}
		errc <- err
	}()
	return errc
}

// elapsed runs f and returns how long it took.
func elapsed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// A caller whose ctx ends while the watch starts gets ctx's error then,
// not after nats.go's own request wait (5 s).
func TestHubStartWaitsWithinTheCallersContext(t *testing.T) {
	n := natstest.WithServer(t)
	h, _, _ := stalledHub(t, n)
	var err error
	took := elapsed(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err = h.Subscribe(ctx, "k")
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, took, 3*time.Second, "Subscribe outlived its ctx by nats.go's request wait")
	require.False(t, h.Running())
}

// Each try of the start is bounded by the bucket's op timeout (the
// JetStream handle's DefaultTimeout), not by nats.go's request wait,
// which ignores it: three tries of 300 ms end well within nats.go's 5 s.
func TestHubStartBoundedByOpTimeout(t *testing.T) {
	n := natstest.WithServer(t)
	h, _, _ := stalledHub(t, n, jetstream.WithDefaultTimeout(300*time.Millisecond))
	var err error
	took := elapsed(func() { _, err = h.Subscribe(context.Background(), "k") })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "op timeout")
	require.Less(t, took, 3*time.Second, "the start took nats.go's request wait, not the op timeout")
}

// While the watch starts, the hub's lock is free: another caller of the
// hub is not held up by the start's request, and Close abandons the start
// at once, its waiters told the hub closed.
func TestHubStartHoldsNoLock(t *testing.T) {
	n := natstest.WithServer(t)
	h, _, b := stalledHub(t, n)
	errc := subscribeInBackground(t, h)
	// The consumer's creation reached the server: the start is under way.
	natstest.Eventually(t, 10*time.Second, func() bool { return natstest.BucketConsumers(t, n.JS, b.Name()) == 1 },
		"the start's request reaches the server")
	var running bool
	took := elapsed(func() { running = h.Running() })
	require.False(t, running)
	require.Less(t, took, time.Second, "Running waited for the start's request")
	took = elapsed(func() { require.NoError(t, h.Close()) })
	require.Less(t, took, 3*time.Second, "Close waited for the start's request")
	err := natstest.Recv(t, errc, 5*time.Second, "the waiting Subscribe")
	require.ErrorIs(t, err, kvx.ErrHubClosed)
}

// Callers share the start in progress: one whose ctx ends leaves it to
// the others, who get the watch, and the bucket gets one consumer.
func TestHubStartSharedByItsWaiters(t *testing.T) {
	n := natstest.WithServer(t)
	h, p, b := stalledHub(t, n)
	errc := subscribeInBackground(t, h)
	natstest.Eventually(t, 10*time.Second, func() bool { return natstest.BucketConsumers(t, n.JS, b.Name()) == 1 },
		"the start's request reaches the server")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := h.Subscribe(ctx, "k")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	p.Stall(false)
	require.NoError(t, natstest.Recv(t, errc, 10*time.Second, "the waiting Subscribe"))
	require.True(t, h.Running())
	require.Equal(t, 1, natstest.BucketConsumers(t, n.JS, b.Name()), "one start for both callers")
}

// Close deletes the watch's consumer within the op timeout, not nats.go's
// request wait: a stalled connection holds Close for the op timeout, and
// Close says the delete went unanswered.
func TestHubCloseBoundedByOpTimeout(t *testing.T) {
	n := natstest.WithServer(t)
	p, js := natstest.ThroughProxy(t, n, jetstream.WithDefaultTimeout(300*time.Millisecond))
	b := openBucket(t, js, 1)
	h := b.NewHub(">")
	s, err := h.Subscribe(natstest.Context(t, 10*time.Second), "k")
	require.NoError(t, err)
	p.Stall(true)
	t.Cleanup(func() { p.Stall(false) })
	took := elapsed(func() { err = h.Close() })
	require.Less(t, took, 3*time.Second, "Close waited for nats.go's request wait")
	require.True(t, errors.Is(err, context.DeadlineExceeded), "Close: %v", err)
	_, open := <-s.C()
	require.False(t, open, "Close released the subscriber")
}

// A hub that stops when idle keeps no watch whose every caller gave up
// before it started: the start's consumer goes, and nothing runs.
func TestHubStartNobodyWaitsForOnAnIdleHub(t *testing.T) {
	n := natstest.WithServer(t)
	h, p, b := stalledHub(t, n)
	h.StopWhenIdle()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := h.Subscribe(ctx, "k")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	natstest.Eventually(t, 10*time.Second, func() bool { return natstest.BucketConsumers(t, n.JS, b.Name()) == 1 },
		"the start's request reaches the server")
	p.Stall(false)
	natstest.Eventually(t, 10*time.Second, func() bool { return natstest.BucketConsumers(t, n.JS, b.Name()) == 0 },
		"the abandoned start's consumer is deleted")
	require.False(t, h.Running())
}

// A start whose consumer creation overran the op timeout is tried again
// while its caller waits, within the caller's ctx: a loaded cluster's
// slow consumer assignment is not the caller's failure (CI saw a worker's
// Start fail after one 5 s try with 15 s of its ctx left).
func TestHubStartTriesAgainAfterAnOverrun(t *testing.T) {
	n := natstest.WithServer(t)
	h, p, b := stalledHub(t, n, jetstream.WithDefaultTimeout(300*time.Millisecond))
	errc := subscribeInBackground(t, h)
	// Each try's request reaches the server and makes a consumer.
	consumers := natstest.ConsumersSeen(t, n.JS, b.Name())
	natstest.Eventually(t, 10*time.Second, func() bool { return consumers() >= 2 }, "the start tries again after its first try overran")
	p.Stall(false)
	require.NoError(t, natstest.Recv(t, errc, 10*time.Second, "the waiting Subscribe"))
	require.True(t, h.Running())
}
