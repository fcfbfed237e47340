// Package clock is the one clock of natscoord: library code reads the
// time only through it. Every package that lets a caller or a test
// choose its time source takes a Clock (kvlock's in-process Locker,
// WithClock; the tasks client, tasks.Config.Clock; the task runtime,
// worker.Config.Clock; kvledger's MemStore, MemStoreOptions.Clock; the
// dashboard, dashboard.Config.Clock), and kvlease's Manager reads one.
// Real is the system clock; Manual moves only when a test advances it;
// Timer is a resettable timer on a Clock for a loop that selects on it.
//
// A bound on a wait for the server or for a process (an operation's
// timeout, a retry pause, a drain) is real time whatever the component's
// Clock, as only real time makes a server answer: it is spelled
// clock.Real(), so that the choice is visible (why, at length:
// internal/kvx/optimeout.go). Start and Since measure durations that are
// reported, not judged. Time that only the server may judge (a lease's
// TTL, another process's liveness) is never read from a Clock: it runs on
// the server's clock.
//
// TestLibraryReadsTimeOnlyThroughClock (internal/testsuite/modcheck)
// fails on a bare time.Now, Since, Until or timer outside this package,
// except in the places it lists with their reasons.
package clock

import (
	"sync"
	"time"

	"github.com/natscoord/natscoord/internal/heapx"
)

// Clock is a time source: the time now, and timers on that time.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once, after d, unless stop (which reports whether
	// it prevented the call) runs first.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Real returns the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Func returns a Clock reading now, whose timers run in real time: a
// clock that is off by some amount (a pause, skew), for tests.
func Func(now func() time.Time) Clock { return funcClock(now) }

type funcClock func() time.Time

func (f funcClock) Now() time.Time { return f() }

func (funcClock) AfterFunc(d time.Duration, g func()) func() bool { return time.AfterFunc(d, g).Stop }

// Manual is a Clock that moves only when Advance is called, so a test
// can let a TTL pass at once and deterministically. Timer functions run
// on the goroutine that calls Advance, in due order. It is safe for
// concurrent use.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers *heapx.Heap[*manualTimer]
}

// NewManual returns a Manual clock reading start (a fixed date when start
// is zero).
func NewManual(start time.Time) *Manual {
	if start.IsZero() {
		start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return &Manual{now: start, timers: heapx.New(func(a, b *manualTimer) bool {
		if a.at.Equal(b.at) {
			return a.seq < b.seq
		}
		return a.at.Before(b.at)
	}, func(t *manualTimer, i int) { t.index = i })}
}

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d; d <= 0 runs it at the next Advance.
func (c *Manual) AfterFunc(d time.Duration, f func()) func() bool {
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
func (c *Manual) Advance(d time.Duration) {
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
	// A concurrent Advance that went further while a timer ran keeps its
	// time: the clock never goes back.
	if end.After(c.now) {
		c.now = end
	}
	c.mu.Unlock()
}

type manualTimer struct {
	at    time.Time
	seq   uint64 // keeps timers due at the same instant in scheduling order
	f     func()
	index int
}

// Start is the start of an operation whose duration is reported (an
// observer's event, a metric), not judged: the monotonic time now when
// on, else the zero time, so that an operation nobody observes reads no
// clock. Durations are measured in real time, whatever Clock the
// component runs on: they describe the work, not a time a test chooses.
func Start(on bool) time.Time {
	if !on {
		return time.Time{}
	}
	return time.Now()
}

// Since is the duration since a time from Start: 0 for the zero time.
func Since(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return time.Since(t)
}
