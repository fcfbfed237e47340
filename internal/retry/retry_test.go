package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/retry"
)

var errTransient = errors.New("transient")

// The ceiling on tries holds: a transient failure is tried exactly Tries
// times, and Do returns the last error.
func TestDoStopsAtTries(t *testing.T) {
	tries := 0
	err := retry.Policy{Tries: 3, Pause: time.Millisecond}.Do(context.Background(), func(context.Context) error {
		tries++
		return errTransient
	})
	require.ErrorIs(t, err, errTransient)
	require.Equal(t, 3, tries)
}

// A permanent error ends the loop at once; success after transient
// failures returns nil.
func TestDoTransientVersusPermanent(t *testing.T) {
	errPermanent := errors.New("permanent")
	p := retry.Policy{Tries: 5, Transient: func(err error) bool { return errors.Is(err, errTransient) }}
	tries := 0
	err := p.Do(context.Background(), func(context.Context) error { tries++; return errPermanent })
	require.ErrorIs(t, err, errPermanent)
	require.Equal(t, 1, tries)

	tries = 0
	err = p.Do(context.Background(), func(context.Context) error {
		if tries++; tries < 3 {
			return errTransient
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, tries)
}

// A ctx that ends during a pause ends the loop at once, not after the
// pause: Do returns the last try's error and Loop.Err ctx's.
func TestDoCtxEndsDuringPause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tries := 0
	start := time.Now()
	time.AfterFunc(20*time.Millisecond, cancel)
	err := retry.Policy{Tries: 10, Pause: time.Hour}.Do(ctx, func(context.Context) error { tries++; return errTransient })
	require.ErrorIs(t, err, errTransient)
	require.ErrorIs(t, err, context.Canceled, "the ctx that ended the pauses says so too")
	require.Equal(t, 1, tries)
	require.Less(t, time.Since(start), 10*time.Second)

	l := retry.Policy{Tries: 10, Pause: time.Hour}.Start(ctx)
	require.True(t, l.Next(), "the first try runs whatever ctx's state")
	require.False(t, l.Next())
	require.ErrorIs(t, l.Err(), context.Canceled)
}

// A policy without Tries runs until its ctx ends, and refuses a ctx that
// cannot end (the loop would never end).
func TestNoTriesNeedsCtxThatEnds(t *testing.T) {
	err := retry.Policy{}.Do(context.Background(), func(context.Context) error { return errTransient })
	require.ErrorIs(t, err, retry.ErrNoCeiling)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	tries := 0
	err = retry.Policy{Pause: time.Millisecond, MaxPause: 2 * time.Millisecond}.Do(ctx, func(context.Context) error { tries++; return errTransient })
	require.ErrorIs(t, err, errTransient)
	require.Greater(t, tries, 1)
	require.Error(t, ctx.Err())
}

// PerTry bounds each try's ctx, not the whole loop's.
func TestDoPerTry(t *testing.T) {
	tries := 0
	err := retry.Policy{Tries: 2, PerTry: 5 * time.Millisecond}.Do(context.Background(), func(ctx context.Context) error {
		tries++
		<-ctx.Done()
		return ctx.Err()
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 2, tries)
}

// Ceiling is Tries × PerTry plus the doubling pauses, capped; NoPause
// skips a pause without advancing the schedule.
func TestCeilingAndSchedule(t *testing.T) {
	p := retry.Policy{Tries: 4, Pause: 10 * time.Millisecond, MaxPause: 25 * time.Millisecond, PerTry: time.Second}
	require.Equal(t, 4*time.Second+(10+20+25)*time.Millisecond, p.Ceiling())
	require.Equal(t, 3*250*time.Millisecond, retry.Policy{Tries: 4, Pause: 250 * time.Millisecond, MaxPause: 250 * time.Millisecond}.Ceiling())
	require.Equal(t, time.Duration(0), retry.Policy{Pause: time.Second}.Ceiling())
	for n, want := range []time.Duration{10, 10, 20, 25, 25} {
		require.Equal(t, want*time.Millisecond, p.PauseAfter(max(n, 1)), "after %d failures", n)
	}
	require.Equal(t, time.Second, retry.Policy{Pause: time.Second}.PauseAfter(9), "no MaxPause: Pause every time")

	l := retry.Policy{Tries: 3, Pause: time.Hour}.Start(context.Background())
	require.True(t, l.Next())
	require.Equal(t, 0, l.Try())
	l.NoPause()
	require.True(t, l.Next(), "NoPause: no hour-long pause")
	require.Equal(t, 1, l.Try())
	require.False(t, l.Last())
	l.NoPause()
	require.True(t, l.Next())
	require.True(t, l.Last())
	require.False(t, l.Next())
	require.NoError(t, l.Err())
}
