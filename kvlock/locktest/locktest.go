// Package locktest is the conformance suite of kvlock.Service: every
// backend (the NATS Locker, the in-process Memory, and any a user writes
// over another store) must pass it, so code written against Service
// behaves the same on each.
//
// Use it from a test:
//
//	func TestMyBackend(t *testing.T) {
//		locktest.Run(t, locktest.Harness{
//			New: func(t *testing.T, cfg kvlock.Config) kvlock.Service { ... },
//		})
//	}
//
// It uses only the testing package's own methods, so importing it adds no
// test dependency to a module. Every subtest gets a fresh Service from
// New and closes it.
package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/natscoord/natscoord/kvlock"
)

// Harness describes a backend under test.
type Harness struct {
	// New returns a fresh Service for one subtest, configured with cfg
	// (TTL, RenewInterval and Fair are set by the suite). The suite closes
	// it; New may also register its own cleanup with t.Cleanup.
	New func(t *testing.T, cfg kvlock.Config) kvlock.Service
	// Advance moves the backend's clock forward by d. Nil means the real
	// clock: the suite then sleeps for d where time must pass, and where
	// the backend must act once it has (an unrenewed lock ending), waits
	// for that, bounded by Timeout, instead.
	Advance func(d time.Duration)
	// Timeout bounds every wait for something the backend must do by
	// itself (a hand-over, a loss noticed by a renewal). Default 5s.
	Timeout time.Duration
}

// TTL is the lock TTL the suite configures: the smallest the NATS server
// accepts, so that expiry tests are short on the real clock.
const TTL = time.Second

// Run runs every conformance test as a subtest of t.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("locktest: Harness.New is nil")
	}
	if h.Timeout == 0 {
		h.Timeout = 5 * time.Second
	}
	s := suite{h}
	for _, c := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"TryAcquireContention", s.tryAcquireContention},
		{"TokensRise", s.tokensRise},
		{"AcquireWaitsForRelease", s.acquireWaits},
		{"AcquireGivesUpWithContext", s.acquireGivesUp},
		{"ReleaseIsOwnerConditional", s.releaseOwnerConditional},
		{"ExpiryWithoutRenewal", s.expiry},
		{"RenewKeepsTheLock", s.renewKeeps},
		{"HoldRenewsPastTTL", s.holdRenews},
		{"HoldLossCancelsContext", s.holdLoss},
		{"HoldReleaseAndParentCancel", s.holdRelease},
		{"FairHandover", s.fairHandover},
		{"InvalidKeys", s.invalidKeys},
		{"Election", s.election},
		{"Close", s.close},
	} {
		t.Run(c.name, c.fn)
	}
}

type suite struct{ h Harness }

func (s suite) service(t *testing.T, fair bool) kvlock.Service {
	t.Helper()
	svc := s.h.New(t, kvlock.Config{TTL: TTL, RenewInterval: TTL / 4, Fair: fair})
	if svc == nil {
		t.Fatal("locktest: New returned nil")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := svc.Close(ctx); err != nil && !errors.Is(err, kvlock.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return svc
}

// start is the opening of most scenarios: a context bounded for the
// subtest, a fresh Service and a key of the subtest's own.
func (s suite) start(t *testing.T, fair bool) (context.Context, kvlock.Service, string) {
	t.Helper()
	return s.ctx(t), s.service(t, fair), key(t, "k")
}

func (s suite) ctx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// advance lets d pass on the backend's clock.
func (s suite) advance(d time.Duration) {
	if s.h.Advance != nil {
		s.h.Advance(d)
		return
	}
	time.Sleep(d)
}

// advanceManual moves a manual clock forward by d and does nothing on the
// real clock: for a scenario that then waits, bounded, for what the
// passing time brings, so the real clock costs only the time it takes.
func (s suite) advanceManual(d time.Duration) {
	if s.h.Advance != nil {
		s.h.Advance(d)
	}
}

// key is a key unique to the running subtest, so backends whose state
// outlives a Service (a shared server) see no leftovers.
func key(t *testing.T, suffix string) string {
	return kvlock.Key("locktest", t.Name(), suffix)
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func mustIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got %v, want an error matching %v", what, err, target)
	}
}

func try(t *testing.T, svc kvlock.Service, ctx context.Context, k string) (kvlock.Held, bool) {
	t.Helper()
	l, ok, err := svc.TryAcquire(ctx, k)
	must(t, err, "TryAcquire "+k)
	if ok != (l != nil) {
		t.Fatalf("TryAcquire %s: ok %v with lock %v", k, ok, l)
	}
	return l, ok
}

// acquire is Acquire that fails the test on an error.
func acquire(t *testing.T, svc kvlock.Service, ctx context.Context, k string) kvlock.Held {
	t.Helper()
	l, err := svc.Acquire(ctx, k)
	must(t, err, "Acquire "+k)
	return l
}

// hold is Hold that fails the test on an error.
func hold(t *testing.T, svc kvlock.Service, ctx context.Context, k string) (context.Context, func()) {
	t.Helper()
	hctx, rel, err := svc.Hold(ctx, k)
	must(t, err, "Hold "+k)
	return hctx, rel
}

// mustNotTry fails the test (with what) if TryAcquire takes k.
func mustNotTry(t *testing.T, svc kvlock.Service, ctx context.Context, k, what string) {
	t.Helper()
	if _, ok := try(t, svc, ctx, k); ok {
		t.Fatal(what)
	}
}

// tokenAbove fails the test unless l's fencing token is above prev.
func tokenAbove(t *testing.T, l kvlock.Held, prev uint64, what string) {
	t.Helper()
	if l.Token() <= prev {
		t.Fatalf("%s %d is not above %d", what, l.Token(), prev)
	}
}

// forceReleaser returns svc's ForceRelease, or skips the subtest for a
// backend that has none.
func forceReleaser(t *testing.T, svc kvlock.Service) kvlock.ForceReleaser {
	t.Helper()
	fr, ok := svc.(kvlock.ForceReleaser)
	if !ok {
		t.Skip("backend has no ForceRelease")
	}
	return fr
}

// acquired is the outcome of an Acquire run by waitFor.
type acquired struct {
	l   kvlock.Held
	err error
}

// waitFor runs Acquire(ctx, k) in a goroutine and delivers its outcome.
func waitFor(svc kvlock.Service, ctx context.Context, k string) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := svc.Acquire(ctx, k)
		ch <- acquired{l, err}
	}()
	return ch
}

// waited receives the lock of a waitFor within the harness timeout.
func (s suite) waited(t *testing.T, w <-chan acquired, what string) kvlock.Held {
	t.Helper()
	r := recv(t, s, w, what)
	must(t, r.err, what)
	return r.l
}

// mustTry is try that fails the test unless the lock was acquired.
func mustTry(t *testing.T, svc kvlock.Service, ctx context.Context, k, what string) kvlock.Held {
	t.Helper()
	l, ok := try(t, svc, ctx, k)
	if !ok {
		t.Fatal(what)
	}
	return l
}

// tryUntil tries k until it is acquired or the harness timeout passes
// (for a lock the backend frees by itself, e.g. the server's expiry).
func (s suite) tryUntil(t *testing.T, svc kvlock.Service, ctx context.Context, k, what string) kvlock.Held {
	t.Helper()
	var l kvlock.Held
	s.eventually(t, func() bool {
		var ok bool
		l, ok = try(t, svc, ctx, k)
		return ok
	}, what)
	return l
}

func release(t *testing.T, l kvlock.Held) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must(t, l.Release(ctx), "Release "+l.Key())
}

// wait waits up to the harness timeout for ch to close.
func (s suite) wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(s.h.Timeout):
		t.Fatalf("timed out after %v waiting for %s", s.h.Timeout, what)
	}
}

// recv receives one value within the harness timeout.
func recv[T any](t *testing.T, s suite, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed", what)
		}
		return v
	case <-time.After(s.h.Timeout):
		t.Fatalf("timed out after %v waiting for %s", s.h.Timeout, what)
	}
	panic("unreachable")
}

// eventually polls cond every few milliseconds until it holds or the
// harness timeout passes.
func (s suite) eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(s.h.Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", s.h.Timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
