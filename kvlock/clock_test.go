package kvlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlock"
)

func TestManualClockRunsTimersInOrder(t *testing.T) {
	c := kvlock.NewManualClock(time.Time{})
	start := c.Now()
	var order []int
	var at []time.Duration
	c.AfterFunc(2*time.Second, func() { order = append(order, 2); at = append(at, c.Now().Sub(start)) })
	stop := c.AfterFunc(time.Second, func() { order = append(order, 99) })
	c.AfterFunc(time.Second, func() {
		order = append(order, 1)
		at = append(at, c.Now().Sub(start))
		c.AfterFunc(500*time.Millisecond, func() { order = append(order, 15); at = append(at, c.Now().Sub(start)) })
	})
	require.True(t, stop())
	require.False(t, stop(), "stopped once")
	c.Advance(999 * time.Millisecond)
	require.Empty(t, order)
	c.Advance(5 * time.Second)
	require.Equal(t, []int{1, 15, 2}, order, "due order, timers scheduled by timers included")
	require.Equal(t, []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second}, at, "each runs at its own time")
	require.Equal(t, 5999*time.Millisecond, c.Now().Sub(start))
	c.Advance(-time.Second)
	require.Equal(t, 5999*time.Millisecond, c.Now().Sub(start), "never backwards")
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"nats://a:4222", "memory:", "embedded:/x", "embedded:", "redis://x", "", ":", "nats:", "tls://a,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := kvlock.ParseURL(s)
		if err != nil {
			if !(errorsIs(err, kvlock.ErrUnknownBackend) || errorsIs(err, kvlock.ErrInvalidConfig)) {
				t.Fatalf("%q: error %v matches no sentinel", s, err)
			}
			return
		}
		switch b.Kind {
		case kvlock.KindNATS, kvlock.KindEmbedded, kvlock.KindMemory:
		default:
			t.Fatalf("%q parsed to kind %q", s, b.Kind)
		}
	})
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
