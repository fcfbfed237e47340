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
