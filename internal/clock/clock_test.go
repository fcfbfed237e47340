package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/clock"
)

// Func reads the given time; its timers run in real time and stop.
func TestFuncClock(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := clock.Func(func() time.Time { return at })
	require.Equal(t, at, c.Now())
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("a Func clock's timer never fired")
	}
	stop := c.AfterFunc(time.Hour, func() { t.Error("a stopped timer fired") })
	require.True(t, stop())
}

// Manual timers due at one instant run in scheduling order, and a
// stopped one never runs.
func TestManualSameInstantInOrder(t *testing.T) {
	c := clock.NewManual(time.Time{})
	var order []int
	for i := range 3 {
		c.AfterFunc(time.Second, func() { order = append(order, i) })
	}
	stop := c.AfterFunc(time.Second, func() { order = append(order, 99) })
	require.True(t, stop())
	c.Advance(time.Second)
	require.Equal(t, []int{0, 1, 2}, order)
	var _ clock.Clock = c
	var _ clock.Clock = clock.Real()
}

// A Timer fires once per arming that comes due; Reset replaces an
// arming, and after Stop or Reset C holds nothing from an earlier one.
func TestTimer(t *testing.T) {
	m := clock.NewManual(time.Time{})
	tm := clock.NewTimer(m)
	tm.Reset(time.Second)
	tm.Reset(3 * time.Second) // replaces the first
	m.Advance(2 * time.Second)
	require.Empty(t, tm.C, "a replaced arming fired")
	m.Advance(time.Second)
	require.Len(t, tm.C, 1)
	tm.Reset(time.Second)
	require.Empty(t, tm.C, "Reset left an earlier firing in C")
	tm.Stop()
	m.Advance(time.Hour)
	require.Empty(t, tm.C, "a stopped timer fired")

	rt := clock.NewTimer(clock.Real())
	rt.Reset(time.Hour)
	rt.Reset(time.Millisecond)
	select {
	case <-rt.C:
	case <-time.After(10 * time.Second):
		t.Fatal("a real Timer never fired")
	}
	rt.Reset(time.Hour)
	rt.Stop()
}

// Since measures from Start; without an observer Start reads no clock.
func TestStopwatch(t *testing.T) {
	require.True(t, clock.Start(false).IsZero())
	require.Zero(t, clock.Since(clock.Start(false)))
	require.GreaterOrEqual(t, clock.Since(clock.Start(true)), time.Duration(0))
}
