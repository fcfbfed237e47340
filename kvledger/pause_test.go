package kvledger_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A pause is created if absent and deleted at its revision; the record
// watch with controls delivers the pauses stored when it starts, then
// each pause and resume, in order, on the store's one watch.
func TestKVStorePauses(t *testing.T) {
	n := natstest.WithServer(t)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	ctx := natstest.Context(t, 30*time.Second)
	first, err := s.PauseKind(ctx, kvledger.Pause{Kind: "a.b c", Actor: "me"})
	require.NoError(t, err)

	var (
		mu   sync.Mutex
		seen []kvledger.PauseChange
	)
	synced := make(chan struct{})
	w, err := s.WatchRecordsAndControls(ctx, func(c kvledger.Change) {
		if c.Synced {
			close(synced)
		}
	}, nil, func(c kvledger.PauseChange) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c)
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	<-synced

	_, err = s.PauseKind(ctx, kvledger.Pause{Kind: "a.b c"})
	require.ErrorIs(t, err, kvledger.ErrPaused)
	_, err = s.PauseKind(ctx, kvledger.Pause{Kind: string(make([]byte, kvledger.MaxKindBytes+1))})
	require.ErrorIs(t, err, kvledger.ErrInvalidPause)
	second, err := s.PauseKind(ctx, kvledger.Pause{Kind: "z", Schedules: true})
	require.NoError(t, err)
	ps, err := s.Pauses(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	require.Equal(t, "a.b c", ps[0].Kind)
	require.Equal(t, kvledger.Actor("me"), ps[0].Actor)
	require.True(t, ps[1].Schedules)

	require.ErrorIs(t, s.ResumeKind(ctx, "z", second.Rev+100), kvledger.ErrMoved)
	require.NoError(t, s.ResumeKind(ctx, "z", second.Rev))
	require.ErrorIs(t, s.ResumeKind(ctx, "z", 0), kvledger.ErrNotPaused)
	require.NoError(t, s.ResumeKind(ctx, "a.b c", 0))

	natstest.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 4
	}, "the initial pause, then a pause and two resumes")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, kvledger.PauseChange{Kind: "a.b c", Paused: true, Rev: first.Rev, Pause: first}, seen[0])
	require.Equal(t, "z", seen[1].Kind)
	require.True(t, seen[1].Paused)
	require.False(t, seen[2].Paused)
	require.Equal(t, "z", seen[2].Kind)
	require.False(t, seen[3].Paused)
	require.Equal(t, "a.b c", seen[3].Kind)
}
