package kvlease

import (
	"sync"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/heapx"
)

// scheduler is the manager's one timer for all guards: a min-heap keyed by
// each guard's next due time (its next renewal when it renews itself, else
// the end of its validity window). Idle guards cost a heap slot, not a
// goroutine or a timer; due renewals go to the manager's fixed renewPool.
//
// Lock order: Guard.opMu, then Guard.mu, then scheduler.mu (a leaf).
type scheduler struct {
	mu     sync.Mutex
	h      *heapx.Heap[*Guard]
	wake   chan struct{} // buffered 1: the earliest due time changed
	stop   chan struct{}
	done   chan struct{}
	onDue  func(g *Guard)
	closed bool
	// armed is when the loop's timer fires next. set wakes the loop only
	// for an entry due before it: an uncontended acquire/release cycle
	// then costs no scheduler wake-up, since each new guard is due no
	// earlier than the one before it.
	armed time.Time

	// now is the manager's clock, on which due times are read; the timer
	// runs on clk, real time: a renewal must reach the server before the
	// lease's TTL runs out on the server's clock.
	now func() time.Time
	clk clock.Clock
}

func newScheduler(clk clock.Clock, now func() time.Time, onDue func(*Guard)) *scheduler {
	s := &scheduler{
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), onDue: onDue,
		armed: now().Add(time.Hour),
		h:     heapx.New(func(a, b *Guard) bool { return a.at.Before(b.at) }, func(g *Guard, i int) { g.hidx = i }),
		now:   now, clk: clk,
	}
	go s.run()
	return s
}

// set (re)schedules g at at.
func (s *scheduler) set(g *Guard, at time.Time) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	first := at.Before(s.armed)
	g.at = at
	if g.hidx >= 0 {
		s.h.Fix(g.hidx)
	} else {
		s.h.Push(g)
	}
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// remove unschedules g (no-op when it is not scheduled).
func (s *scheduler) remove(g *Guard) {
	s.mu.Lock()
	if g.hidx >= 0 {
		s.h.Remove(g.hidx)
	}
	s.mu.Unlock()
}

func (s *scheduler) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.Len()
}

func (s *scheduler) run() {
	defer close(s.done)
	t := clock.NewTimer(s.clk)
	defer t.Stop()
	for {
		now := s.now()
		var due []*Guard
		next := time.Hour
		s.mu.Lock()
		for g, ok := s.h.Peek(); ok && !g.at.After(now); g, ok = s.h.Peek() {
			due = append(due, s.h.Pop())
		}
		if g, ok := s.h.Peek(); ok {
			next = g.at.Sub(now)
		}
		s.armed = now.Add(next)
		s.mu.Unlock()
		for _, g := range due {
			s.onDue(g) // reschedules g itself when it stays live
		}
		if len(due) > 0 {
			continue // onDue may have scheduled something already due
		}
		t.Reset(next)
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-t.C:
		}
	}
}

// close stops the loop and waits for it; pending entries are dropped.
func (s *scheduler) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.closed = true
	s.h.Clear()
	s.mu.Unlock()
	close(s.stop)
	<-s.done
}
