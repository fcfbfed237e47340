package kvx

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// TestBucketCloseEndsReplies: the subscription every write of a Bucket
// is answered on (awaited and pipelined alike) is the Bucket's, and its
// Close ends it while the connection stays open: before, it lived, with
// nats.go's goroutine, until the connection closed. A write waiting at
// Close learns at once that its outcome is unknown, and later writes are
// refused.
func TestBucketCloseEndsReplies(t *testing.T) {
	n := natstest.WithServer(t)
	js := n.NewJS(t)
	ctx := natstest.Context(t, 30*time.Second)
	b, err := Open(ctx, js, Config{Bucket: "replies", LimitMarkerTTL: time.Second})
	require.NoError(t, err)
	base := natstest.IgnoreCurrent()     // the server's own, for the stream
	subs := js.Conn().NumSubscriptions() // nats.go's for the requests of Open

	rev, err := b.UpdateAs(ctx, "k", []byte("1"), 0, 0, "id-1", nil) // awaited
	require.NoError(t, err)
	_, err = b.UpdateAsyncAs("k", []byte("2"), rev, 0, "id-2", nil)(ctx) // pipelined
	require.NoError(t, err)
	require.Equal(t, subs+1, js.Conn().NumSubscriptions(), "one subscription for both")

	// A write nobody answers (a silent listener on its subject, so no
	// "no responders" either), waiting when the Bucket closes.
	silent, err := js.Conn().SubscribeSync("silent")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Unsubscribe() })
	m := &nats.Msg{Subject: "silent"}
	token, ch, err := b.post(m)
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() {
		_, err := b.await(ctx, m, token, ch)
		waited <- err
	}()
	_, err = silent.NextMsg(10 * time.Second) // it was sent
	require.NoError(t, err)
	b.Close()
	select {
	case err = <-waited:
		require.ErrorIs(t, err, ErrClosedUnanswered)
		require.True(t, OutcomeUnknown(err))
	case <-ctx.Done():
		t.Fatal("a write waiting at Close was not ended")
	}
	_, err = b.UpdateAs(ctx, "k", []byte("3"), rev+1, 0, "id-3", nil)
	require.ErrorIs(t, err, ErrClosed)
	require.False(t, OutcomeUnknown(err), "refused, never sent: %v", err)
	require.NoError(t, silent.Unsubscribe())
	natstest.VerifyNone(t, base)
	require.Equal(t, subs, js.Conn().NumSubscriptions())
	b.Close() // idempotent
}

// TestClosedBucketRefusalIsKnown: a write a closed Bucket refuses was
// never sent, so nothing of it can land: ErrClosed, a known failure, for
// an awaited write, a pipelined one and a batch alike. Only a write that
// was waiting for its answer at Close (ErrClosedUnanswered, which wraps
// ErrClosed) is an outcome unknown; both used to be, so the callers read
// back and settled writes that had not left.
func TestClosedBucketRefusalIsKnown(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	b, err := Open(ctx, n.NewJS(t), Config{Bucket: "refused", LimitMarkerTTL: time.Second})
	require.NoError(t, err)
	rev, err := b.UpdateAs(ctx, "k", []byte("1"), 0, 0, "id-1", nil)
	require.NoError(t, err)
	b.Close()

	_, err = b.UpdateAs(ctx, "k", []byte("2"), rev, 0, "id-2", nil)
	requireRefused(t, err, "awaited")
	_, err = b.UpdateAsyncAs("k", []byte("2"), rev, 0, "id-2", nil)(ctx)
	requireRefused(t, err, "pipelined")
	_, err = b.CreateBatchAs(ctx, "batch", []string{"a", "b"}, [][]byte{[]byte("a"), []byte("b")}, nil)
	requireRefused(t, err, "batch")
	e, err := b.Get(ctx, "k") // reads are not the reply subscription's
	require.NoError(t, err)
	require.Equal(t, rev, e.Revision, "nothing was stored")
}

func requireRefused(t *testing.T, err error, what string) {
	t.Helper()
	require.ErrorIs(t, err, ErrClosed, what)
	require.NotErrorIs(t, err, ErrClosedUnanswered, what)
	require.False(t, OutcomeUnknown(err), "%s: refused, never sent: %v", what, err)
}

// TestCloseDeliversAnswersOnTheirWay: an answer the server sent before
// Bucket.Close still reaches its write (the subscription is drained, not
// dropped), so a write that landed reports its revision rather than an
// outcome unknown its caller must settle by reading.
func TestCloseDeliversAnswersOnTheirWay(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	p, js := natstest.ThroughProxy(t, n)
	b, err := Open(ctx, js, Config{Bucket: "drained", LimitMarkerTTL: time.Second})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	rev, err := b.UpdateAs(ctx, "k", []byte("1"), 0, 0, "id-1", nil) // subscribes
	require.NoError(t, err)
	reader, err := Open(ctx, n.NewJS(t), Config{Bucket: "drained", LimitMarkerTTL: time.Second})
	require.NoError(t, err)

	p.Stall(true) // the write reaches the server; its answer is held back
	t.Cleanup(func() { p.Stall(false) })
	sent := p.ServerBytes()
	wrote := make(chan error, 1)
	var got uint64
	go func() {
		var err error
		got, err = b.UpdateAs(ctx, "k", []byte("2"), rev, 0, "id-2", nil)
		wrote <- err
	}()
	natstest.Eventually(t, 5*time.Second, func() bool {
		e, err := reader.Get(ctx, "k")
		return err == nil && e.Revision > rev
	}, "the write landed")
	// The server stores the write before it sends the answer: wait for
	// the answer to be on its way (held by the proxy), or Close's drain
	// could unsubscribe before the server sent it, and the server would
	// drop it (failed twice in loaded runs).
	natstest.Eventually(t, 5*time.Second, func() bool { return p.ServerBytes() > sent }, "the server sent the answer")
	b.replies.mu.Lock()
	sub := b.replies.sub
	b.replies.mu.Unlock()
	closed := make(chan struct{})
	go func() { defer close(closed); b.Close() }() // waits for the drain
	natstest.Eventually(t, 5*time.Second, sub.IsDraining, "Close drains the subscription")
	p.Stall(false)
	require.NoError(t, natstest.Recv(t, wrote, 10*time.Second, "the write's answer"))
	require.Equal(t, rev+1, got)
	natstest.WaitClosed(t, closed, 10*time.Second, "Close returned once drained")
	require.False(t, sub.IsValid(), "the subscription has ended when Close returns")
}

// TestRepliesEndWithTheConnection: a write waiting when its connection
// closes fails at once with nats.ErrConnectionClosed (an outcome
// unknown), as nats.go's request path did, not at its deadline.
func TestRepliesEndWithTheConnection(t *testing.T) {
	n := natstest.WithServer(t)
	js := n.NewJS(t)
	ctx := natstest.Context(t, 30*time.Second)
	b, err := Open(ctx, js, Config{Bucket: "replies", LimitMarkerTTL: time.Second})
	require.NoError(t, err)
	silent, err := js.Conn().SubscribeSync("silent")
	require.NoError(t, err)
	m := &nats.Msg{Subject: "silent"}
	token, ch, err := b.post(m)
	require.NoError(t, err)
	_, err = silent.NextMsg(10 * time.Second)
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() {
		_, err := b.await(ctx, m, token, ch)
		waited <- err
	}()
	js.Conn().Close()
	select {
	case err = <-waited:
		require.True(t, errors.Is(err, nats.ErrConnectionClosed), "%v", err)
		require.True(t, OutcomeUnknown(err))
	case <-ctx.Done():
		t.Fatal("a write waiting when its connection closed was not ended")
	}
	// A write after the end is refused with the connection's error.
	_, _, err = b.post(&nats.Msg{Subject: "silent"})
	require.ErrorIs(t, err, nats.ErrConnectionClosed)
}

// TestRepliesRefuseASubscriptionEndedBeforeItsHandler: nats.go runs a
// subscription's closed handler as its goroutine ends, so one that ended
// between Subscribe and SetClosedHandler (its connection closed in
// between) runs none: a write waiting on it would have waited for its
// deadline. install refuses it, and the next write subscribes again.
func TestRepliesRefuseASubscriptionEndedBeforeItsHandler(t *testing.T) {
	n := natstest.WithServer(t)
	nc := n.NewJS(t).Conn()
	sub, err := nc.Subscribe("ended.*", func(*nats.Msg) {})
	require.NoError(t, err)
	exited := make(chan struct{})
	sub.SetClosedHandler(func(string) { close(exited) })
	require.NoError(t, sub.Unsubscribe())
	natstest.WaitClosed(t, exited, 5*time.Second, "the subscription's goroutine ended")

	var r replies
	require.ErrorIs(t, r.install(nc, sub, "ended."), nats.ErrBadSubscription)
	require.Nil(t, r.sub, "not installed")
	_, _, ch, err := r.expect(nc) // subscribes anew
	require.NoError(t, err)
	r.close(5 * time.Second)
	require.Nil(t, natstest.Recv(t, ch, 5*time.Second, "the waiter ended by close"))
}

// TestNoRespondersResentThenRefused: a write no stream listens for, a
// single write or a batch (whose stream is gone), is sent again on the
// noResponders policy (resend; its pauses show in the time it takes)
// and, once its ctx ends during a pause, reported as no stream response:
// a known failure (nothing was stored), not an outcome unknown. A batch's
// was ctx's error joined to "no responders", which OutcomeUnknown took
// for a batch that may have landed.
func TestNoRespondersResentThenRefused(t *testing.T) {
	for _, c := range []struct {
		name     string
		noStream bool // the bucket's stream deleted first
		write    func(ctx context.Context, b *Bucket) error
	}{
		{"write", false, func(ctx context.Context, b *Bucket) error {
			_, err := b.send(ctx, &nats.Msg{Subject: "no.stream.here"}, casCond(0, 0, "id"))
			return err
		}},
		{"batch", true, func(ctx context.Context, b *Bucket) error {
			_, err := b.CreateBatchAs(ctx, "id", []string{"a", "b"}, [][]byte{[]byte("a"), []byte("b")}, nil)
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := natstest.WithServer(t)
			js := n.NewJS(t)
			ctx := natstest.Context(t, 30*time.Second)
			b, err := Open(ctx, js, Config{Bucket: "nobody", LimitMarkerTTL: time.Second})
			require.NoError(t, err)
			t.Cleanup(b.Close)
			if c.noStream {
				require.NoError(t, js.DeleteStream(ctx, b.stream))
			}
			wctx, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
			defer cancel()
			start := time.Now()
			err = c.write(wctx, b)
			require.ErrorIs(t, err, jetstream.ErrNoStreamResponse)
			require.False(t, OutcomeUnknown(err), "%v", err)
			require.GreaterOrEqual(t, time.Since(start), 2*noResponders.Pause, "resent after its pauses")
		})
	}
}

// TestUnansweredWriteKeepsCtxErrAndCause: a write whose ctx ends before
// its answer reports ctx's error (so OutcomeUnknown holds and the caller
// reads the key back) with the cause the ctx was cancelled with. A
// pipelined write's wait used to report the cause alone, which
// OutcomeUnknown did not know for a cause of the caller's own.
func TestUnansweredWriteKeepsCtxErrAndCause(t *testing.T) {
	n := natstest.WithServer(t)
	js := n.NewJS(t)
	ctx := natstest.Context(t, 30*time.Second)
	b, err := Open(ctx, js, Config{Bucket: "cause", LimitMarkerTTL: time.Second})
	require.NoError(t, err)
	t.Cleanup(b.Close)
	silent, err := js.Conn().SubscribeSync("silent")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Unsubscribe() })
	m := &nats.Msg{Subject: "silent"}
	token, ch, err := b.post(m)
	require.NoError(t, err)
	draining := errors.New("draining")
	wctx, cancel := context.WithCancelCause(ctx)
	cancel(draining)
	_, err = b.await(wctx, m, token, ch)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, draining)
	require.True(t, OutcomeUnknown(err))
}

// TestAsClosed: a closed Bucket's refusal and its unanswered write both
// come back as the owner's closed error, each keeping what tells them
// apart (OutcomeUnknown); any other error, or one already named, is
// returned as it is.
func TestAsClosed(t *testing.T) {
	owner := errors.New("owner: closed")
	refused := AsClosed(fmt.Errorf("write: %w", ErrClosed), owner)
	require.ErrorIs(t, refused, owner)
	require.ErrorIs(t, refused, ErrClosed)
	require.False(t, OutcomeUnknown(refused))
	unanswered := AsClosed(ErrClosedUnanswered, owner)
	require.ErrorIs(t, unanswered, owner)
	require.ErrorIs(t, unanswered, ErrClosedUnanswered)
	require.True(t, OutcomeUnknown(unanswered))
	require.Same(t, ErrConflict, AsClosed(ErrConflict, owner))
	require.Nil(t, AsClosed(nil, owner))
	require.Same(t, refused, AsClosed(refused, owner), "named once")
}
