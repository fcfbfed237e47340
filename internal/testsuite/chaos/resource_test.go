package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestResourceFencing(t *testing.T) {
	r := NewResource()
	ok, err := r.Write("a", 5, func() error { return nil })
	require.NoError(t, err)
	require.True(t, ok)
	ok, _ = r.Write("b", 7, nil)
	require.True(t, ok)
	ok, _ = r.Write("a", 5, nil) // zombie: refused, not a violation
	require.False(t, ok)
	require.Empty(t, r.Stats().Violations)

	ok, _ = r.Write("a", 5, func() error { return nil }) // still "valid": overlap
	require.False(t, ok)
	require.Len(t, r.Stats().Violations, 1)

	r.Write("c", 7, nil) // a second holder with token 7
	require.Len(t, r.Stats().Violations, 2)

	lost := errors.New("lost")
	_, err = r.Write("b", 7, func() error { return lost })
	require.ErrorIs(t, err, lost)
	st := r.Stats()
	require.Equal(t, 3, st.Accepted)
	require.Equal(t, 2, st.Refused)
	require.Equal(t, uint64(7), st.Highest)
}

func TestResourceWaitAbove(t *testing.T) {
	r := NewResource()
	r.Write("a", 3, nil)
	require.NoError(t, r.WaitAbove(context.Background(), 2))
	done := make(chan error, 1)
	go func() { done <- r.WaitAbove(context.Background(), 3) }()
	r.Write("a", 3, nil) // no rise
	r.Write("b", 4, nil)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("WaitAbove did not wake")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, r.WaitAbove(ctx, 10), context.Canceled)
}
