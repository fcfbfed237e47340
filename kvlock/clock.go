package kvlock

import (
	"container/heap"
	"sync"
	"time"
)

// Clock is the time source of the in-process Locker (NewMemory): TTLs,
// validity windows and Hold's renewals run on it. The NATS Locker always
// uses real time, because there the server's clock expires locks.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once, after d, unless stop (which reports whether
	// it prevented the call) runs first.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// RealClock returns the system clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// ManualClock is a Clock that moves only when Advance is called, so a test
// can let a TTL pass at once and deterministically. Timer functions run
// on the goroutine that calls Advance, in due order. It is safe for
// concurrent use.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers manualTimers
}

// NewManualClock returns a ManualClock reading start (a fixed date when
// start is zero).
func NewManualClock(start time.Time) *ManualClock {
	if start.IsZero() {
		start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return &ManualClock{now: start}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d; d <= 0 runs it at the next Advance.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualTimer{at: c.now.Add(d), seq: c.seq, f: f, index: -1}
	heap.Push(&c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.index < 0 {
			return false
		}
		heap.Remove(&c.timers, t.index)
		return true
	}
}

// Advance moves the clock forward by d, running every timer that comes
// due on the way at its own time (timers they schedule included), and
// returns once they have all run. A negative d is treated as zero.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(max(d, 0))
	for len(c.timers) > 0 && !c.timers[0].at.After(end) {
		t := heap.Pop(&c.timers).(*manualTimer)
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = end
	c.mu.Unlock()
}

type manualTimer struct {
	at    time.Time
	seq   uint64 // keeps timers due at the same instant in scheduling order
	f     func()
	index int
}

type manualTimers []*manualTimer

func (h manualTimers) Len() int { return len(h) }
func (h manualTimers) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h manualTimers) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *manualTimers) Push(x any) {
	t := x.(*manualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *manualTimers) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}
