package kvledger_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

func TestClaimIfReadyAndClaimNext(t *testing.T) {
	ctx := context.Background()
	l, err := kvledger.New(nil)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	submit := func(sub kvledger.Submission) {
		t.Helper()
		sub.Now = now
		ok, err := l.Submit(ctx, "test", sub)
		require.NoError(t, err)
		require.True(t, ok)
	}
	submit(kvledger.Submission{Key: "a", Kind: "x"})
	submit(kvledger.Submission{Key: "b", Kind: "x", Needs: []kvledger.IdempotencyKey{"a"}})
	submit(kvledger.Submission{Key: "later", Kind: "x", Delay: time.Minute})
	submit(kvledger.Submission{Key: "other", Kind: "y"})

	// Claim keeps its contract (it takes b although a is pending);
	// ClaimIfReady does not.
	_, err = l.ClaimIfReady(ctx, "w", "b", "w1", time.Minute, now)
	require.ErrorIs(t, err, kvledger.ErrNotReady)
	_, err = l.ClaimIfReady(ctx, "w", "later", "w1", time.Minute, now)
	require.ErrorIs(t, err, kvledger.ErrNotReady)
	_, err = l.Submit(ctx, "test", kvledger.Submission{Key: "bad", Delay: time.Second, RunAt: now})
	require.ErrorIs(t, err, kvledger.ErrInvalidState)

	rec, err := l.ClaimNext(ctx, "w", "w1", time.Minute, now, "x")
	require.NoError(t, err)
	require.Equal(t, kvledger.IdempotencyKey("a"), rec.Key)
	require.Equal(t, 1, rec.Attempts)
	_, err = l.ClaimNext(ctx, "w", "w1", time.Minute, now, "x")
	require.ErrorIs(t, err, kvledger.ErrNoReady, "b waits for a, later for its time")

	_, err = l.Finish(ctx, "w", "a", "w1", rec.Fence, kvledger.Outcome{Status: kvledger.StatusCompleted, Result: json.RawMessage(`{"n":1}`)}, now)
	require.NoError(t, err)
	rec, err = l.ClaimNext(ctx, "w", "w1", time.Minute, now, "x")
	require.NoError(t, err)
	require.Equal(t, kvledger.IdempotencyKey("b"), rec.Key)
	res, err := l.Results(ctx, "b")
	require.NoError(t, err)
	require.JSONEq(t, `{"n":1}`, string(res["a"]))

	// A retry goes back to pending with a RunAt; the next claim counts attempt 2.
	retry := now.Add(10 * time.Second)
	rec2, err := l.Finish(ctx, "w", "b", "w1", rec.Fence, kvledger.Outcome{Status: kvledger.StatusPending, Error: "flaky", RunAt: retry}, now)
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusPending, rec2.Status)
	require.Equal(t, "flaky", rec2.LastError)
	_, err = l.ClaimIfReady(ctx, "w", "b", "w1", time.Minute, now)
	require.ErrorIs(t, err, kvledger.ErrNotReady)
	rec, err = l.ClaimIfReady(ctx, "w", "b", "w1", time.Minute, retry)
	require.NoError(t, err)
	require.Equal(t, 2, rec.Attempts)

	rec, err = l.ClaimNext(ctx, "w", "w2", time.Minute, now.Add(time.Hour))
	require.NoError(t, err, "any kind; b's lease ran out by then, later is due")
	require.Contains(t, []kvledger.IdempotencyKey{"b", "later", "other"}, rec.Key)
	_, err = l.Finish(ctx, "w", "b", "w1", 1, kvledger.Outcome{Status: kvledger.StatusCompleted}, now)
	require.ErrorIs(t, err, kvledger.ErrFenced)
}

// Reopen returns a failed key to pending and unblocks its dependents
// transitively, each with its own event; Cancel and Delete publish theirs.
func TestOperatorActionsEvents(t *testing.T) {
	ctx := context.Background()
	l, err := kvledger.New(nil)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	for _, s := range []kvledger.Submission{
		{Key: "r"}, {Key: "m", Needs: []kvledger.IdempotencyKey{"r"}}, {Key: "l", Needs: []kvledger.IdempotencyKey{"m"}},
		{Key: "x"}, {Key: "both", Needs: []kvledger.IdempotencyKey{"r", "x"}},
	} {
		s.Now = now
		_, err := l.Submit(ctx, "t", s)
		require.NoError(t, err)
	}
	f, err := l.Claim(ctx, "t", "r", "w", time.Minute, now)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "t", "r", "w", f, kvledger.StatusFailed, now))
	_, err = l.Cancel(ctx, "op", "x", "", now)
	require.NoError(t, err)
	for _, k := range []kvledger.IdempotencyKey{"m", "l", "both"} {
		s, _, _ := l.State(ctx, k)
		require.Equal(t, kvledger.StatusBlocked, s.Status, k)
	}

	rec, err := l.Reopen(ctx, "op", "r", now)
	require.NoError(t, err)
	require.Equal(t, f+1, rec.Fence)
	for _, k := range []kvledger.IdempotencyKey{"m", "l"} {
		s, _, _ := l.State(ctx, k)
		require.Equal(t, kvledger.StatusPending, s.Status, k)
		require.Contains(t, keyEvents(t, l, string(k)), kvledger.UnblockedEvent)
	}
	both, _, _ := l.State(ctx, "both")
	require.Equal(t, kvledger.StatusBlocked, both.Status, "x, cancelled, still blocks it")
	require.Equal(t, kvledger.IdempotencyKey("x"), both.BlockedBy)
	require.Contains(t, keyEvents(t, l, "r"), kvledger.ReopenedEvent)
	require.Contains(t, keyEvents(t, l, "x"), kvledger.CancelledEvent)

	require.ErrorIs(t, l.Delete(ctx, "op", "m", now), kvledger.ErrNotFinal)
	require.NoError(t, l.Delete(ctx, "op", "both", now))
	require.Contains(t, keyEvents(t, l, "both"), kvledger.DeletedEvent)
	_, err = l.Submit(ctx, "t", kvledger.Submission{Key: "both", Now: now})
	require.NoError(t, err)
	g, err := l.Claim(ctx, "t", "both", "w", time.Minute, now)
	require.NoError(t, err)
	require.Greater(t, g, both.Fence, "fences keep rising across Delete")
}

func TestWaitFinal(t *testing.T) {
	n := natstest.WithServer(t)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	l, err := kvledger.New(store)
	require.NoError(t, err)
	ctx := natstest.Context(t, 10*time.Second)
	now := time.Now()
	_, err = l.Admit(ctx, "t", "a", 1, nil, now)
	require.NoError(t, err)
	done := make(chan map[kvledger.IdempotencyKey]kvledger.TaskState, 1)
	go func() {
		final, err := l.WaitFinal(ctx, "a", "b")
		if err != nil {
			t.Error(err)
		}
		done <- final
	}()
	f, err := l.Claim(ctx, "t", "a", "w", time.Minute, now)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "t", "a", "w", f, kvledger.StatusFailed, now))
	_, err = l.Admit(ctx, "t", "b", 1, nil, now, "a") // admitted blocked: final
	require.NoError(t, err)
	final := natstest.Recv(t, done, 10*time.Second, "WaitFinal returns")
	require.Equal(t, kvledger.StatusFailed, final["a"].Status)
	require.Equal(t, kvledger.StatusBlocked, final["b"].Status)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = l.WaitFinal(short, "never")
	require.ErrorIs(t, err, context.DeadlineExceeded)

	mem, err := kvledger.New(nil)
	require.NoError(t, err)
	_, err = mem.WaitFinal(ctx, "a")
	require.ErrorIs(t, err, kvledger.ErrNoWatch)
}

// ClaimNext takes the highest priority first, then the task that waited
// longest.
func TestClaimNextByPriority(t *testing.T) {
	ctx := context.Background()
	l, err := kvledger.New(nil)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	for i, s := range []struct {
		key  kvledger.IdempotencyKey
		prio int
	}{{"old", 0}, {"low", -1}, {"high", 4}, {"high-later", 4}, {"mid", 1}} {
		ok, err := l.Submit(ctx, "test", kvledger.Submission{Key: s.key, Kind: "x", Priority: s.prio, Now: now.Add(time.Duration(i) * time.Second)})
		require.NoError(t, err)
		require.True(t, ok)
	}
	var got []kvledger.IdempotencyKey
	for range 5 {
		rec, err := l.ClaimNext(ctx, "w", "w1", time.Minute, now.Add(time.Minute), "x")
		require.NoError(t, err)
		got = append(got, rec.Key)
	}
	require.Equal(t, []kvledger.IdempotencyKey{"high", "high-later", "mid", "old", "low"}, got)
}

// countingLoads is a store that counts its reads, by key.
type countingLoads struct {
	kvledger.Store
	mu    sync.Mutex
	loads map[kvledger.IdempotencyKey]int
}

func (s *countingLoads) Load(ctx context.Context, key kvledger.IdempotencyKey) (kvledger.TaskState, bool, error) {
	s.mu.Lock()
	s.loads[key]++
	s.mu.Unlock()
	return s.Store.Load(ctx, key)
}

func (s *countingLoads) reset() map[kvledger.IdempotencyKey]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.loads
	s.loads = map[kvledger.IdempotencyKey]int{}
	return n
}

// A claim of a task with needs reads each need once: Judge's readiness
// check and the closure check (which blocks a task whose ancestor failed)
// share the reads, and only the closure check reads further ancestors.
func TestClaimIfReadyReadsEachNeedOnce(t *testing.T) {
	ctx := context.Background()
	store := &countingLoads{Store: kvledger.NewMemStore(), loads: map[kvledger.IdempotencyKey]int{}}
	l, err := kvledger.New(store)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	for _, sub := range []kvledger.Submission{
		{Key: "root"},
		{Key: "a", Needs: []kvledger.IdempotencyKey{"root"}},
		{Key: "b"},
		{Key: "c", Needs: []kvledger.IdempotencyKey{"a", "b"}},
	} {
		sub.Now = now
		ok, err := l.Submit(ctx, "test", sub)
		require.NoError(t, err)
		require.True(t, ok)
	}
	for _, k := range []kvledger.IdempotencyKey{"root", "a", "b"} {
		rec, err := l.ClaimIfReady(ctx, "w", k, "w", time.Minute, now)
		require.NoError(t, err)
		_, err = l.Finish(ctx, "w", k, "w", rec.Fence, kvledger.Outcome{Status: kvledger.StatusCompleted}, now)
		require.NoError(t, err)
	}
	store.reset()
	rec, err := l.ClaimIfReady(ctx, "w", "c", "w", time.Minute, now)
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusClaimed, rec.Status)
	require.Equal(t, map[kvledger.IdempotencyKey]int{"c": 1, "a": 1, "b": 1, "root": 1}, store.reset(),
		"c itself, each need once, and a's need for the closure check")
}

// Claim and ClaimIfReady write a claim the same way, except that only
// ClaimIfReady's counts an attempt.
func TestOnlyClaimIfReadyCountsAnAttempt(t *testing.T) {
	ctx := context.Background()
	l, err := kvledger.New(nil)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	ok, err := l.Submit(ctx, "test", kvledger.Submission{Key: "k", Now: now})
	require.NoError(t, err)
	require.True(t, ok)
	fence, err := l.Claim(ctx, "w", "k", "w", time.Minute, now)
	require.NoError(t, err)
	s, _, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusClaimed, s.Status)
	require.Equal(t, fence, s.Fence)
	require.Equal(t, now.Add(time.Minute), s.LeaseUntil)
	require.Zero(t, s.Attempts)
	require.NoError(t, l.Release(ctx, "w", "k", "w", fence, now))
	rec, err := l.ClaimIfReady(ctx, "w", "k", "w", time.Minute, now)
	require.NoError(t, err)
	require.Equal(t, fence+1, rec.Fence)
	require.Equal(t, now.Add(time.Minute), rec.LeaseUntil)
	require.Equal(t, 1, rec.Attempts)
}
