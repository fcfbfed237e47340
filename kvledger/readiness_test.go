package kvledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// Judge is the one statement of readiness: every case the index, the
// claims and the dashboard meet, in one table.
func TestJudge(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	needs := map[kvledger.IdempotencyKey]kvledger.Status{
		"done": kvledger.StatusCompleted, "run": kvledger.StatusClaimed, "wait": kvledger.StatusPending,
		"bad": kvledger.StatusFailed, "blk": kvledger.StatusBlocked,
	}
	need := func(k kvledger.IdempotencyKey) (kvledger.Status, bool) { s, ok := needs[k]; return s, ok }
	pending := func(runAt time.Time, ns ...kvledger.IdempotencyKey) kvledger.TaskState {
		return kvledger.TaskState{Key: "k", Status: kvledger.StatusPending, RunAt: runAt, Needs: ns}
	}
	claimed := kvledger.TaskState{Key: "k", Status: kvledger.StatusClaimed}
	later := now.Add(time.Second)
	const (
		unknown = kvledger.LeaseStateUnknown
		live    = kvledger.LeaseStateLive
		ended   = kvledger.LeaseStateEnded
	)
	for _, c := range []struct {
		name  string
		rec   kvledger.TaskState
		lease kvledger.LeaseState
		want  kvledger.Verdict
	}{
		{"pending, no needs", pending(time.Time{}), unknown, kvledger.Verdict{Kind: kvledger.VerdictReady}},
		{"pending, due now", pending(now), ended, kvledger.Verdict{Kind: kvledger.VerdictReady}},
		{"pending, needs completed", pending(now, "done", "done"), unknown, kvledger.Verdict{Kind: kvledger.VerdictReady}},
		{"pending, run-at ahead", pending(later, "wait"), unknown, kvledger.Verdict{Kind: kvledger.VerdictWaitTime, At: later}},
		{"pending, a need running", pending(time.Time{}, "done", "run"), unknown, kvledger.Verdict{Kind: kvledger.VerdictWaitNeed, Need: "run"}},
		{"pending, a need pending", pending(time.Time{}, "wait"), unknown, kvledger.Verdict{Kind: kvledger.VerdictWaitNeed, Need: "wait"}},
		{"pending, a need missing", pending(time.Time{}, "gone"), unknown, kvledger.Verdict{Kind: kvledger.VerdictWaitNeed, Need: "gone"}},
		{"pending, a need failed", pending(time.Time{}, "done", "bad"), unknown, kvledger.Verdict{Kind: kvledger.VerdictBlockedNeed, Need: "bad"}},
		{"pending, a need blocked", pending(time.Time{}, "blk"), unknown, kvledger.Verdict{Kind: kvledger.VerdictBlockedNeed, Need: "blk"}},
		{"pending, first need decides", pending(time.Time{}, "wait", "bad"), unknown, kvledger.Verdict{Kind: kvledger.VerdictWaitNeed, Need: "wait"}},
		{"pending, held by a live per-record lease", pending(time.Time{}), live, kvledger.Verdict{Kind: kvledger.VerdictHeld}},
		{"pending, held beats run-at", pending(later), live, kvledger.Verdict{Kind: kvledger.VerdictHeld}},
		{"claimed, lease live", claimed, live, kvledger.Verdict{Kind: kvledger.VerdictHeld}},
		{"claimed, lease ended", claimed, ended, kvledger.Verdict{Kind: kvledger.VerdictTakeover}},
		{"claimed, lease unknown", claimed, unknown, kvledger.Verdict{Kind: kvledger.VerdictReadLease}},
		{"completed", kvledger.TaskState{Status: kvledger.StatusCompleted}, ended, kvledger.Verdict{Kind: kvledger.VerdictFinal}},
		{"failed", kvledger.TaskState{Status: kvledger.StatusFailed}, unknown, kvledger.Verdict{Kind: kvledger.VerdictFinal}},
		{"blocked, even with a live lease", kvledger.TaskState{Status: kvledger.StatusBlocked}, live, kvledger.Verdict{Kind: kvledger.VerdictFinal}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := kvledger.Judge(c.rec, need, c.lease, now)
			require.Equal(t, c.want, got)
			claimable := c.want.Kind == kvledger.VerdictReady || c.want.Kind == kvledger.VerdictTakeover || c.want.Kind == kvledger.VerdictReadLease
			require.Equal(t, claimable, got.Claimable())
		})
	}
}

// The attempt limit and the retry-or-fail decision, stated once.
func TestAttemptLimitAndRetryOrFail(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	calls := 0
	backoff := func(n int) time.Duration { calls++; return time.Duration(n) * time.Second }
	rec := func(attempts, max int) kvledger.TaskState {
		return kvledger.TaskState{Key: "k", Status: kvledger.StatusClaimed, Attempts: attempts, MaxAttempts: max}
	}
	for _, c := range []struct {
		name      string
		rec       kvledger.TaskState
		def       int
		permanent bool
		limit     int
		used      bool
		want      kvledger.Outcome
	}{
		{"record's own limit, attempts left", rec(1, 2), 5, false, 2, false,
			kvledger.Outcome{Status: kvledger.StatusPending, Error: "boom", RunAt: now.Add(time.Second)}},
		{"record's own limit, last attempt", rec(2, 2), 5, false, 2, true,
			kvledger.Outcome{Status: kvledger.StatusFailed, Error: "boom"}},
		{"the runtime's default", rec(3, 0), 3, false, 3, true,
			kvledger.Outcome{Status: kvledger.StatusFailed, Error: "boom"}},
		{"the runtime's default, attempts left", rec(2, 0), 3, false, 3, false,
			kvledger.Outcome{Status: kvledger.StatusPending, Error: "boom", RunAt: now.Add(2 * time.Second)}},
		{"no bound", rec(100, 0), 0, false, 0, false,
			kvledger.Outcome{Status: kvledger.StatusPending, Error: "boom", RunAt: now.Add(100 * time.Second)}},
		{"permanent fails at once", rec(1, 5), 0, true, 5, false,
			kvledger.Outcome{Status: kvledger.StatusFailed, Error: "boom"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.limit, kvledger.AttemptLimit(c.rec, c.def))
			require.Equal(t, c.used, kvledger.AttemptsUsed(c.rec, c.def))
			calls = 0
			require.Equal(t, c.want, kvledger.RetryOrFail(c.rec, c.def, "boom", c.permanent, backoff, now))
			if c.want.Status == kvledger.StatusFailed {
				require.Zero(t, calls, "backoff is asked only for a retry")
			}
		})
	}
	negative := kvledger.RetryOrFail(rec(1, 3), 0, "boom", false, func(int) time.Duration { return -time.Hour }, now)
	require.Equal(t, now, negative.RunAt, "a negative pause retries now")
}
