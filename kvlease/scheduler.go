package kvlease

import (
	"container/heap"
	"sync"
	"time"
)

// scheduler is the manager's one timer for all guards: a min-heap keyed by
// each guard's next due time (its next renewal when it renews itself, else
// the end of its validity window). Idle guards cost a heap slot, not a
// goroutine or a timer; due renewals go to the manager's fixed renewPool.
//
// Lock order: Guard.opMu, then Guard.mu, then scheduler.mu (a leaf).
type scheduler struct {
	mu     sync.Mutex
	h      guardHeap
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
}

func newScheduler(onDue func(*Guard)) *scheduler {
	s := &scheduler{
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), onDue: onDue,
		armed: time.Now().Add(time.Hour),
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
		heap.Fix(&s.h, g.hidx)
	} else {
		heap.Push(&s.h, g)
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
		heap.Remove(&s.h, g.hidx)
	}
	s.mu.Unlock()
}

func (s *scheduler) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.h)
}

func (s *scheduler) run() {
	defer close(s.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		var due []*Guard
		next := time.Hour
		s.mu.Lock()
		for len(s.h) > 0 && !s.h[0].at.After(now) {
			due = append(due, heap.Pop(&s.h).(*Guard))
		}
		if len(s.h) > 0 {
			next = s.h[0].at.Sub(now)
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
	for _, g := range s.h {
		g.hidx = -1
	}
	s.h = nil
	s.mu.Unlock()
	close(s.stop)
	<-s.done
}

type guardHeap []*Guard

func (h guardHeap) Len() int           { return len(h) }
func (h guardHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h guardHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx = i
	h[j].hidx = j
}
func (h *guardHeap) Push(x any) {
	g := x.(*Guard)
	g.hidx = len(*h)
	*h = append(*h, g)
}
func (h *guardHeap) Pop() any {
	old := *h
	g := old[len(old)-1]
	old[len(old)-1] = nil
	g.hidx = -1
	*h = old[:len(old)-1]
	return g
}
