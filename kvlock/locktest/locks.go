package locktest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/natscoord/natscoord/kvlock"
)

func (s suite) tryAcquireContention(t *testing.T) {
	ctx, svc, k := s.start(t, false)
	a := mustTry(t, svc, ctx, k, "a free lock was not acquired")
	if a.Key() != k {
		t.Fatalf("Key() = %q, want %q", a.Key(), k)
	}
	mustNotTry(t, svc, ctx, k, "a held lock was acquired again")
	must(t, a.Err(), "Err of a held lock")
	release(t, a)
	s.wait(t, a.Done(), "Done after Release")
	mustIs(t, context.Cause(a.Context()), kvlock.ErrReleased, "cause after Release")
	must(t, a.Release(ctx), "second Release")
	b := mustTry(t, svc, ctx, k, "a released lock was not acquired")
	release(t, b)
}

func (s suite) tokensRise(t *testing.T) {
	ctx, svc, k := s.start(t, false)
	var last uint64
	for i := range 5 {
		l := acquire(t, svc, ctx, k)
		tokenAbove(t, l, last, fmt.Sprintf("round %d: the token", i))
		last = l.Token()
		tok, ok := kvlock.TokenFromContext(l.Context())
		if !ok || tok != l.Token() {
			t.Fatalf("TokenFromContext = %d, %v; want %d", tok, ok, l.Token())
		}
		release(t, l)
	}
}

func (s suite) acquireWaits(t *testing.T) {
	ctx, svc, k := s.start(t, false)
	a := acquire(t, svc, ctx, k)
	w := waitFor(svc, ctx, k)
	select {
	case r := <-w:
		t.Fatalf("a waiter returned while the lock was held: %v, %v", r.l, r.err)
	case <-time.After(50 * time.Millisecond): // nothing may arrive while a holds it
	}
	release(t, a)
	b := s.waited(t, w, "the waiter to get the released lock")
	tokenAbove(t, b, a.Token(), "the waiter's token")
	must(t, b.Err(), "the waiter's lock outlives the wait")
	release(t, b)
}

func (s suite) acquireGivesUp(t *testing.T) {
	ctx, svc, k := s.start(t, false)
	a := acquire(t, svc, ctx, k)
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
	ctx, svc, k := s.start(t, false)
	fr := forceReleaser(t, svc)
	a, _ := try(t, svc, ctx, k)
	forced, err := fr.ForceRelease(ctx, k)
	must(t, err, "ForceRelease")
	if !forced {
		t.Fatal("ForceRelease of a held lock reported nothing to remove")
	}
	b := s.tryUntil(t, svc, ctx, k, "the force-released lock to be acquired")
	tokenAbove(t, b, a.Token(), "the new holder's token")
	mustIs(t, a.Release(ctx), kvlock.ErrLost, "the old holder's late Release")
	mustIs(t, a.Release(ctx), kvlock.ErrLost, "Release again")
	mustNotTry(t, svc, ctx, k, "the late Release removed the new holder's lock")
	must(t, b.Err(), "new holder after the late Release")
	release(t, b)
	if forced, err := fr.ForceRelease(ctx, k); err != nil || forced {
		t.Fatalf("ForceRelease of a free key = %v, %v; want false, nil", forced, err)
	}
}

func (s suite) expiry(t *testing.T) {
	ctx, svc, k := s.start(t, false)
	a := acquire(t, svc, ctx, k)
	s.advanceManual(TTL)
	s.wait(t, a.Done(), "an unrenewed lock to end after its TTL")
	mustIs(t, context.Cause(a.Context()), kvlock.ErrLost, "cause of expiry")
	mustIs(t, a.Err(), kvlock.ErrLost, "Err after expiry")
	mustIs(t, a.Renew(ctx), kvlock.ErrLost, "Renew after expiry")
	b := s.tryUntil(t, svc, ctx, k, "the expired lock to be free")
	tokenAbove(t, b, a.Token(), "the token after expiry")
	mustIs(t, a.Release(ctx), kvlock.ErrLost, "Release of an expired lock")
	release(t, b)
}

func (s suite) renewKeeps(t *testing.T) {
	ctx, svc, k := s.start(t, false)
	a := acquire(t, svc, ctx, k)
	before := a.ValidUntil()
	s.advance(TTL / 2)
	must(t, a.Renew(ctx), "Renew")
	if !a.ValidUntil().After(before) {
		t.Fatalf("Renew did not move ValidUntil (%v, was %v)", a.ValidUntil(), before)
	}
	s.advance(TTL/2 + TTL/10)
	must(t, a.Err(), "a renewed lock past its first TTL")
	mustNotTry(t, svc, ctx, k, "a renewed lock was acquired by another")
	release(t, a)
}

func (s suite) holdRenews(t *testing.T) {
	ctx, svc, k := s.start(t, false)
	hctx, rel := hold(t, svc, ctx, k)
	defer rel()
	s.advance(2 * TTL)
	must(t, hctx.Err(), "a held lock two TTLs later")
	mustNotTry(t, svc, ctx, k, "a held lock was acquired by another")
	if _, ok := kvlock.TokenFromContext(hctx); !ok {
		t.Fatal("Hold's context carries no token")
	}
}

func (s suite) holdLoss(t *testing.T) {
	ctx, svc, k := s.start(t, false)
	fr := forceReleaser(t, svc)
	hctx, rel := hold(t, svc, ctx, k)
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
	tokenAbove(t, b, tok, "the token after loss")
	release(t, b)
}

func (s suite) holdRelease(t *testing.T) {
	ctx, svc, k := s.start(t, false)
	hctx, rel := hold(t, svc, ctx, k)
	rel()
	rel() // idempotent
	mustIs(t, context.Cause(hctx), kvlock.ErrReleased, "Hold's cause after release")
	b := mustTry(t, svc, ctx, k, "a released hold left the lock held")
	release(t, b)

	pctx, cancel := context.WithCancel(ctx)
	hctx, rel = hold(t, svc, pctx, k)
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
	ctx, svc, k := s.start(t, true)
	a := acquire(t, svc, ctx, k)
	w := waitFor(svc, ctx, k)
	release(t, a)
	b := s.waited(t, w, "the fair waiter's lock")
	tokenAbove(t, b, a.Token(), "the fair waiter's token")
	mustNotTry(t, svc, ctx, k, "a held fair lock was acquired by TryAcquire")
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
	ctx, svc, k := s.start(t, false)
	a := acquire(t, svc, ctx, k)
	hctx, rel := hold(t, svc, ctx, key(t, "h"))
	defer rel()
	c, err := svc.Election(t.Name())
	must(t, err, "Election")
	events := c.Observe(ctx)
	if ev := recv(t, s, events, "first leader event"); !ev.Vacant {
		t.Fatalf("first event %+v, want a vacancy", ev)
	}
	w := waitFor(svc, ctx, k)
	must(t, svc.Close(ctx), "Close")
	must(t, svc.Close(ctx), "second Close")
	s.wait(t, a.Done(), "a held lock to end on Close")
	mustIs(t, context.Cause(a.Context()), kvlock.ErrReleased, "cause of a lock ended by Close")
	s.wait(t, hctx.Done(), "a hold to end on Close")
	mustIs(t, recv(t, s, w, "the waiter to stop on Close").err, kvlock.ErrClosed, "a waiter on Close")
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
