package clock

import (
	"sync"
	"time"
)

// Timer is a resettable timer on a Clock for a loop that selects on it:
// C receives once per arming that comes due. After Reset or Stop returns,
// C holds nothing from an earlier arming (as time.Timer since Go 1.23).
// On Real it reuses one runtime timer. It is safe for concurrent use.
type Timer struct {
	C chan struct{} // buffered 1

	c     Clock
	mu    sync.Mutex
	gen   uint64 // the current arming; a timer of an older one sends nothing
	armed bool
	stop  func() bool // the current arming's stop (not on Real)
	rt    *time.Timer // on Real: the one runtime timer, re-armed by Reset
	due   time.Time   // on Real: when the current arming comes due
}

// NewTimer returns an unarmed Timer on c.
func NewTimer(c Clock) *Timer { return &Timer{C: make(chan struct{}, 1), c: c} }

// Reset arms t to fire after d (d <= 0: as soon as c runs timers),
// replacing any earlier arming.
func (t *Timer) Reset(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopLocked()
	gen := t.gen
	if _, real := t.c.(realClock); real {
		t.due = time.Now().Add(d)
		if t.rt == nil {
			t.rt = time.AfterFunc(d, t.fireReal)
		} else {
			t.rt.Reset(d)
		}
		t.armed = true
		return
	}
	t.armed, t.stop = true, t.c.AfterFunc(d, func() { t.fire(gen) })
}

// Stop disarms t and empties C.
func (t *Timer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopLocked()
}

func (t *Timer) stopLocked() {
	if t.armed {
		if t.rt != nil {
			t.rt.Stop()
		} else {
			t.stop()
		}
		t.armed, t.stop = false, nil
	}
	t.gen++
	select {
	case <-t.C:
	default:
	}
}

// fireReal is the runtime timer's function. A run that started before a
// Reset or Stop and waited for mu behind it finds the timer disarmed, or
// re-armed for later (it then sends nothing: the re-armed timer will).
func (t *Timer) fireReal() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.armed || time.Now().Before(t.due) {
		return
	}
	t.fireLocked()
}

func (t *Timer) fire(gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen {
		return
	}
	t.fireLocked()
}

func (t *Timer) fireLocked() {
	t.armed, t.stop = false, nil
	select {
	case t.C <- struct{}{}:
	default:
	}
}
