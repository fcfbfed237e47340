package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/natscoord/natscoord/kvlock"
)

func (s suite) tryAcquireContention(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	k := key(t, "k")
	a := mustTry(t, svc, ctx, k, "a free lock was not acquired")
	if a.Key() != k {
		t.Fatalf("Key() = %q, want %q", a.Key(), k)
	}
	if _, ok := try(t, svc, ctx, k); ok {
		t.Fatal("a held lock was acquired again")
	}
	must(t, a.Err(), "Err of a held lock")
	release(t, a)
	s.wait(t, a.Done(), "Done after Release")
	mustIs(t, context.Cause(a.Context()), kvlock.ErrReleased, "cause after Release")
	must(t, a.Release(ctx), "second Release")
	b := mustTry(t, svc, ctx, k, "a released lock was not acquired")
	release(t, b)
}

func (s suite) tokensRise(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	k := key(t, "k")
	var last uint64
	for i := range 5 {
		l, err := svc.Acquire(ctx, k)
		must(t, err, "Acquire")
		if l.Token() <= last {
			t.Fatalf("round %d: token %d not above the previous %d", i, l.Token(), last)
		}
		last = l.Token()
		tok, ok := kvlock.TokenFromContext(l.Context())
		if !ok || tok != l.Token() {
			t.Fatalf("TokenFromContext = %d, %v; want %d", tok, ok, l.Token())
		}
		release(t, l)
	}
}

func (s suite) acquireWaits(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	k := key(t, "k")
	a, err := svc.Acquire(ctx, k)
	must(t, err, "Acquire")
	got := make(chan kvlock.Held, 1)
	errs := make(chan error, 1)
	go func() {
		l, err := svc.Acquire(ctx, k)
		if err != nil {
			errs <- err
			return
		}
		got <- l
	}()
	select {
	case <-got:
		t.Fatal("a held lock was acquired by a waiter")
	case err := <-errs:
		t.Fatalf("waiter: %v", err)
	case <-time.After(50 * time.Millisecond): // nothing may arrive while a holds it
	}
	release(t, a)
	var b kvlock.Held
	select {
	case b = <-got:
	case err := <-errs:
		t.Fatalf("waiter: %v", err)
	case <-time.After(s.h.Timeout):
		t.Fatal("the waiter did not get the released lock")
	}
	if b.Token() <= a.Token() {
		t.Fatalf("waiter's token %d not above %d", b.Token(), a.Token())
	}
	must(t, b.Err(), "the waiter's lock outlives the wait")
	release(t, b)
}

func (s suite) acquireGivesUp(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	k := key(t, "k")
	a, err := svc.Acquire(ctx, k)
	must(t, err, "Acquire")
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	l, err := svc.Acquire(wctx, k)
	cancel()
	mustIs(t, err, context.DeadlineExceeded, "a bounded wait for a held lock")
	if l != nil {
		t.Fatal("a failed Acquire returned a lock")
	}
	release(t, a)
	b := mustTry(t, svc, ctx, k, "a waiter that gave up kept a place or the lock")
	release(t, b)
}

func (s suite) releaseOwnerConditional(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	fr, ok := svc.(kvlock.ForceReleaser)
	if !ok {
		t.Skip("backend has no ForceRelease")
	}
	k := key(t, "k")
	a, _ := try(t, svc, ctx, k)
	forced, err := fr.ForceRelease(ctx, k)
	must(t, err, "ForceRelease")
	if !forced {
		t.Fatal("ForceRelease of a held lock reported nothing to remove")
	}
	b := s.tryUntil(t, svc, ctx, k, "the force-released lock to be acquired")
	if b.Token() <= a.Token() {
		t.Fatalf("new holder's token %d not above %d", b.Token(), a.Token())
	}
	mustIs(t, a.Release(ctx), kvlock.ErrLost, "the old holder's late Release")
	mustIs(t, a.Release(ctx), kvlock.ErrLost, "Release again")
	if _, ok := try(t, svc, ctx, k); ok {
		t.Fatal("the late Release removed the new holder's lock")
	}
	must(t, b.Err(), "new holder after the late Release")
	release(t, b)
	if forced, err := fr.ForceRelease(ctx, k); err != nil || forced {
		t.Fatalf("ForceRelease of a free key = %v, %v; want false, nil", forced, err)
	}
}

func (s suite) expiry(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	k := key(t, "k")
	a, err := svc.Acquire(ctx, k)
	must(t, err, "Acquire")
	s.advance(TTL)
	s.wait(t, a.Done(), "an unrenewed lock to end after its TTL")
	mustIs(t, context.Cause(a.Context()), kvlock.ErrLost, "cause of expiry")
	mustIs(t, a.Err(), kvlock.ErrLost, "Err after expiry")
	mustIs(t, a.Renew(ctx), kvlock.ErrLost, "Renew after expiry")
	b := s.tryUntil(t, svc, ctx, k, "the expired lock to be free")
	if b.Token() <= a.Token() {
		t.Fatalf("token %d after expiry not above %d", b.Token(), a.Token())
	}
	mustIs(t, a.Release(ctx), kvlock.ErrLost, "Release of an expired lock")
	release(t, b)
}

func (s suite) renewKeeps(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	k := key(t, "k")
	a, err := svc.Acquire(ctx, k)
	must(t, err, "Acquire")
	before := a.ValidUntil()
	s.advance(TTL / 2)
	must(t, a.Renew(ctx), "Renew")
	if !a.ValidUntil().After(before) {
		t.Fatalf("Renew did not move ValidUntil (%v, was %v)", a.ValidUntil(), before)
	}
	s.advance(TTL/2 + TTL/10)
	must(t, a.Err(), "a renewed lock past its first TTL")
	if _, ok := try(t, svc, ctx, k); ok {
		t.Fatal("a renewed lock was acquired by another")
	}
	release(t, a)
}

func (s suite) holdRenews(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	k := key(t, "k")
	hctx, rel, err := svc.Hold(ctx, k)
	must(t, err, "Hold")
	defer rel()
	s.advance(2 * TTL)
	must(t, hctx.Err(), "a held lock two TTLs later")
	if _, ok := try(t, svc, ctx, k); ok {
		t.Fatal("a held lock was acquired by another")
	}
	if _, ok := kvlock.TokenFromContext(hctx); !ok {
		t.Fatal("Hold's context carries no token")
	}
}

func (s suite) holdLoss(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	fr, ok := svc.(kvlock.ForceReleaser)
	if !ok {
		t.Skip("backend has no ForceRelease")
	}
	k := key(t, "k")
	hctx, rel, err := svc.Hold(ctx, k)
	must(t, err, "Hold")
	tok, _ := kvlock.TokenFromContext(hctx)
	if _, err := fr.ForceRelease(ctx, k); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	if s.h.Advance != nil {
		s.h.Advance(TTL / 4) // a renewal is due: it finds the lock gone
	}
	s.wait(t, hctx.Done(), "Hold's context after the lock was lost")
	mustIs(t, context.Cause(hctx), kvlock.ErrLost, "Hold's cause after loss")
	rel() // after loss: harmless
	b := mustTry(t, svc, ctx, k, "the lost lock is not free")
	if b.Token() <= tok {
		t.Fatalf("token %d after loss not above %d", b.Token(), tok)
	}
	release(t, b)
}

func (s suite) holdRelease(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	k := key(t, "k")
	hctx, rel, err := svc.Hold(ctx, k)
	must(t, err, "Hold")
	rel()
	rel() // idempotent
	mustIs(t, context.Cause(hctx), kvlock.ErrReleased, "Hold's cause after release")
	b := mustTry(t, svc, ctx, k, "a released hold left the lock held")
	release(t, b)

	pctx, cancel := context.WithCancel(ctx)
	hctx, rel, err = svc.Hold(pctx, k)
	must(t, err, "Hold")
	defer rel()
	cancel()
	s.wait(t, hctx.Done(), "Hold's context after its parent was cancelled")
	s.eventually(t, func() bool {
		l, ok := try(t, svc, ctx, k)
		if ok {
			release(t, l)
		}
		return ok
	}, "the lock of a cancelled hold to be released")
}

func (s suite) fairHandover(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, true)
	k := key(t, "k")
	a, err := svc.Acquire(ctx, k)
	must(t, err, "Acquire")
	got := make(chan kvlock.Held, 1)
	go func() {
		l, err := svc.Acquire(ctx, k)
		if err != nil {
			t.Errorf("fair waiter: %v", err)
			close(got)
			return
		}
		got <- l
	}()
	release(t, a)
	b := recv(t, s, got, "the fair waiter's lock")
	if b == nil {
		return
	}
	if b.Token() <= a.Token() {
		t.Fatalf("token %d not above %d", b.Token(), a.Token())
	}
	if _, ok := try(t, svc, ctx, k); ok {
		t.Fatal("a held fair lock was acquired by TryAcquire")
	}
	release(t, b)
}

func (s suite) invalidKeys(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	for _, k := range []string{"", "a b", "a..b", "a.*", ">"} {
		_, err := svc.Acquire(ctx, k)
		mustIs(t, err, kvlock.ErrInvalidKey, "Acquire "+k)
		_, _, err = svc.TryAcquire(ctx, k)
		mustIs(t, err, kvlock.ErrInvalidKey, "TryAcquire "+k)
		_, _, err = svc.Hold(ctx, k)
		mustIs(t, err, kvlock.ErrInvalidKey, "Hold "+k)
	}
	_, err := svc.Election("")
	mustIs(t, err, kvlock.ErrInvalidKey, "an empty election name")
}

func (s suite) close(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	k := key(t, "k")
	a, err := svc.Acquire(ctx, k)
	must(t, err, "Acquire")
	hctx, rel, err := svc.Hold(ctx, key(t, "h"))
	must(t, err, "Hold")
	defer rel()
	c, err := svc.Election(t.Name())
	must(t, err, "Election")
	events := c.Observe(ctx)
	if ev := recv(t, s, events, "first leader event"); !ev.Vacant {
		t.Fatalf("first event %+v, want a vacancy", ev)
	}
	waitErr := make(chan error, 1)
	go func() {
		_, err := svc.Acquire(ctx, k)
		waitErr <- err
	}()
	must(t, svc.Close(ctx), "Close")
	must(t, svc.Close(ctx), "second Close")
	s.wait(t, a.Done(), "a held lock to end on Close")
	mustIs(t, context.Cause(a.Context()), kvlock.ErrReleased, "cause of a lock ended by Close")
	s.wait(t, hctx.Done(), "a hold to end on Close")
	mustIs(t, recv(t, s, waitErr, "the waiter to stop on Close"), kvlock.ErrClosed, "a waiter on Close")
	s.eventually(t, func() bool {
		select {
		case _, ok := <-events:
			return !ok
		default:
			return false
		}
	}, "Observe's channel to close on Close")
	_, err = svc.Acquire(ctx, k)
	mustIs(t, err, kvlock.ErrClosed, "Acquire after Close")
	_, _, err = svc.TryAcquire(ctx, k)
	mustIs(t, err, kvlock.ErrClosed, "TryAcquire after Close")
	mustIs(t, c.Campaign(ctx, "v"), kvlock.ErrClosed, "Campaign after Close")
	if err := a.Release(ctx); err != nil && !errors.Is(err, kvlock.ErrClosed) && !errors.Is(err, kvlock.ErrReleased) {
		t.Fatalf("Release after Close: %v", err)
	}
}
