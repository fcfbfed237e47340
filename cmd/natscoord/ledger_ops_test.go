package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// opReport reads an operator action's --json report.
func opReport(t *testing.T, out string) map[string]string {
	t.Helper()
	var rows []opResult
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	got := make(map[string]string, len(rows))
	for _, r := range rows {
		got[r.Key] = r.Action
	}
	return got
}

// taskPhase is key's phase as `ledger show` reads it.
func taskPhase(t *testing.T, l *kvledger.Ledger, key kvledger.IdempotencyKey) kvledger.Phase {
	t.Helper()
	s, found, err := l.State(natstest.Context(t, 10*time.Second), key)
	require.NoError(t, err)
	require.True(t, found, key)
	return s.Phase(time.Now())
}

// An operator repairs a failed batch from the CLI: reopen, cancel and rm
// take keys or filters, a dry run changes nothing, and each change is the
// ledger's own transition (its record names the event it left).
func TestLedgerOperatorActions(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "mail.1", "--seq", "1", "--kind", "mail")
	c.ok("ledger", "admit", "mail.2", "--seq", "1", "--kind", "mail")
	c.ok("ledger", "admit", "report", "--seq", "1", "--kind", "report", "--needs", "mail.1")
	c.ok("ledger", "admit", "other", "--seq", "1", "--kind", "other")
	l := openTestLedger(t, n)
	finish(t, l, "mail.1", kvledger.StatusFailed)
	finish(t, l, "mail.2", kvledger.StatusFailed)
	require.Equal(t, kvledger.PhaseBlocked, taskPhase(t, l, "report"))

	// Keys and filters do not mix; an action needs one of them.
	require.Contains(t, c.fail("ledger", "reopen"), "needs keys or a filter")
	require.Contains(t, c.fail("ledger", "reopen", "mail.1", "--kind", "mail"), "keys or filters, not both")
	require.Contains(t, c.fail("ledger", "reopen", "--phase", "done"), "--phase: kvledger: unknown phase")

	// A dry run shows what would change and changes nothing.
	require.Equal(t, map[string]string{"mail.1": "would reopen", "mail.2": "would reopen"},
		opReport(t, c.ok("--json", "ledger", "reopen", "--kind", "mail", "--dry-run")))
	require.Equal(t, kvledger.PhaseFailed, taskPhase(t, l, "mail.1"))

	// Cancel by key: a cancelled task has its own state.
	require.Contains(t, c.ok("ledger", "cancel", "other", "--reason", "bad deploy"), "cancelled 1 task(s), 0 error(s)")
	require.Equal(t, kvledger.PhaseCancelled, taskPhase(t, l, "other"))
	require.Contains(t, c.fail("ledger", "cancel", "other"), "not pending or claimed")

	// Reopen by filter: only failed and cancelled tasks of the kind, and
	// the dependent they blocked is unblocked.
	require.Equal(t, map[string]string{"mail.1": "reopened", "mail.2": "reopened"},
		opReport(t, c.ok("--json", "ledger", "reopen", "--phase", "failed", "--prefix", "mail.", "--yes")))
	for _, k := range []kvledger.IdempotencyKey{"mail.1", "mail.2", "report"} {
		require.Equal(t, kvledger.PhasePending, taskPhase(t, l, k), k)
	}
	s, _, err := l.State(natstest.Context(t, 10*time.Second), "mail.1")
	require.NoError(t, err)
	require.Equal(t, kvledger.ReopenedEvent, s.LastEvent)

	// rm removes ended tasks only; a filter skips those that have not ended.
	require.Contains(t, c.fail("ledger", "rm", "mail.1"), "not final")
	require.Equal(t, map[string]string{"other": "removed"}, opReport(t, c.ok("--json", "ledger", "rm", "--phase", "cancelled,failed", "--yes")))
	_, found, err := l.State(natstest.Context(t, 10*time.Second), "other")
	require.NoError(t, err)
	require.False(t, found)
	require.Contains(t, c.fail("ledger", "rm", "other"), `no task "other"`)
}

// purge removes ended tasks; purge --all empties the ledger only when the
// bucket is named again.
func TestLedgerPurge(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "a", "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", "b", "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", "c", "--seq", "1")
	l := openTestLedger(t, n)
	finish(t, l, "a", kvledger.StatusCompleted)
	fb := claim(t, l, "b", "w")

	require.Equal(t, map[string]string{"a": "would remove"}, opReport(t, c.ok("--json", "ledger", "purge", "--dry-run")))
	require.Equal(t, map[string]string{"a": "removed"}, opReport(t, c.ok("--json", "ledger", "purge", "--yes")))

	require.Contains(t, c.fail("ledger", "purge", "--all"), "--confirm "+defaultLedgerBucket)
	require.Contains(t, c.fail("ledger", "purge", "--all", "--confirm", "other"), "--confirm "+defaultLedgerBucket)
	require.Equal(t, map[string]string{"b": "would cancel, would remove", "c": "would cancel, would remove"},
		opReport(t, c.ok("--json", "ledger", "purge", "--all", "--confirm", defaultLedgerBucket, "--dry-run")))
	require.Equal(t, kvledger.PhaseRunning, taskPhase(t, l, "b"))
	// b's claimant runs it on: cancelled, b is cancelling, and kept
	// until its claimant has ended it, so it never runs twice at once.
	r := c.run("ledger", "purge", "--all", "--confirm", defaultLedgerBucket, "--wait", "200ms")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout, "removed 1 task(s), 1 error(s)")
	require.Regexp(t, `(?m)^b\s+running\s+error\s+.*"b" is cancelling: its handler still runs`, r.stdout)
	require.Regexp(t, `(?m)^c\s+pending\s+cancelled, removed\s+-$`, r.stdout)
	require.Equal(t, kvledger.PhaseCancelling, taskPhase(t, l, "b"))
	require.NoError(t, l.Complete(natstest.Context(t, 10*time.Second), "test", "b", "w", fb, kvledger.StatusCompleted, time.Now()))
	require.Equal(t, kvledger.PhaseCancelled, taskPhase(t, l, "b"), "its claimant's end ends it cancelled")
	out := c.ok("ledger", "purge", "--all", "--confirm", defaultLedgerBucket)
	require.Contains(t, out, "removed 1 task(s), 0 error(s)")
	var tasks []kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "ls")), &tasks))
	require.Empty(t, tasks)
}

// stats counts tasks by state and kind, telling scheduled and cancelled
// tasks apart from pending and failed ones.
func TestLedgerStats(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "m1", "--seq", "1", "--kind", "mail")
	c.ok("ledger", "admit", "m2", "--seq", "1", "--kind", "mail", "--delay", "1h")
	c.ok("ledger", "admit", "r1", "--seq", "1", "--kind", "report")
	c.ok("ledger", "cancel", "r1")
	var counts kvledger.Counts
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "stats")), &counts))
	require.Equal(t, 3, counts.Total)
	require.Contains(t, c.ok("--json", "ledger", "stats"), `"by_kind"`, "snake_case like every other --json output")
	require.Equal(t, map[kvledger.Phase]int{kvledger.PhasePending: 1, kvledger.PhaseScheduled: 1}, counts.ByKind["mail"])
	require.Equal(t, map[kvledger.Phase]int{kvledger.PhaseCancelled: 1}, counts.ByKind["report"])
	out := c.ok("ledger", "stats")
	require.Regexp(t, `(?m)^KIND\s+pending\s+scheduled\s+retrying\s+running\s+cancelling\s+completed\s+failed\s+cancelled\s+blocked\s+total$`, out)
	require.Regexp(t, `(?m)^mail\s+1\s+1\s+0\s+0\s+0\s+0\s+0\s+0\s+0\s+2$`, out)
	require.Regexp(t, `(?m)^\(all\)\s+1\s+1\s+0\s+0\s+0\s+0\s+0\s+1\s+0\s+3$`, out)
}

// --seq defaults to 1, and its help says what it protects: a newer
// submission rebases a pending task, an older one changes nothing.
func TestLedgerAdmitSeqDefault(t *testing.T) {
	c, _ := newCLI(t)
	require.Contains(t, c.ok("ledger", "admit", "--no-kind", "x", "--task", `"v1"`), "x admitted: pending")
	c.ok("ledger", "admit", "--no-kind", "x", "--seq", "2", "--task", `"v2"`)
	c.ok("ledger", "admit", "--no-kind", "x", "--task", `"stale"`)
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "x")), &rec))
	require.Equal(t, "v2", rec.Task)
	require.Equal(t, kvledger.Sequence(2), rec.Sequence)
	require.Contains(t, c.ok("ledger", "admit", "--no-kind", "--help"), "--seq protects a task from stale resubmissions")
}

// purge --all empties what it can around a value that is not a record,
// then says so and how to remove it, as ls and the filtered actions do.
func TestLedgerPurgeAllAroundACorruptValue(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "a")
	kv, err := n.JS.KeyValue(natstest.Context(t, 5*time.Second), defaultLedgerBucket)
	require.NoError(t, err)
	_, err = kv.Put(natstest.Context(t, 5*time.Second), "task.b", []byte("garbage"))
	require.NoError(t, err)
	r := c.run("ledger", "purge", "--all", "--confirm", defaultLedgerBucket)
	require.NotEqual(t, 0, r.code)
	require.Regexp(t, `(?m)^a\s+pending\s+cancelled, removed\s+-$`, r.stdout)
	require.Contains(t, r.stderr, "ledger rm --force")
}
