package kvlock

import (
	"sync"
	"time"

	"github.com/natscoord/natscoord/internal/heapx"
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
	timers *heapx.Heap[*manualTimer]
}

// NewManualClock returns a ManualClock reading start (a fixed date when
// start is zero).
func NewManualClock(start time.Time) *ManualClock {
	if start.IsZero() {
		start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return &ManualClock{now: start, timers: heapx.New(func(a, b *manualTimer) bool {
		if a.at.Equal(b.at) {
			return a.seq < b.seq
		}
		return a.at.Before(b.at)
	}, func(t *manualTimer, i int) { t.index = i })}
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
	c.timers.Push(t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.index < 0 {
			return false
		}
		c.timers.Remove(t.index)
		return true
	}
}

// Advance moves the clock forward by d, running every timer that comes
// due on the way at its own time (timers they schedule included), and
// returns once they have all run. A negative d is treated as zero.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(max(d, 0))
	for next, ok := c.timers.Peek(); ok && !next.at.After(end); next, ok = c.timers.Peek() {
		t := c.timers.Pop()
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
