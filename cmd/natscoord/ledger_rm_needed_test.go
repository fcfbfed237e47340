package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A removal never strands a dependent (issue 34, item 4): purge (no
// flags), rm by key and rm by filter keep a completed task that a pending
// task needs, each naming that task, and exit 1; once the dependent has
// ended the task is removed. Without the rule, purge removed a, no worker
// ever started b, and `ledger wait b` said b needs "a", which has no record.
func TestLedgerRemovalKeepsWhatATaskNeeds(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "a")
	c.ok("ledger", "admit", "--no-kind", "b", "--needs", "a")
	l := openTestLedger(t, n)
	finish(t, l, "a", kvledger.StatusCompleted)

	// The dry run says so too, and changes nothing.
	r := c.run("ledger", "purge", "--dry-run")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stdout, `"a" is needed by "b"`)
	r = c.run("ledger", "purge", "--yes")
	require.Equal(t, 1, r.code, r.stdout)
	require.Regexp(t, `(?m)^a\s+completed\s+error\s+kvledger: record is needed by tasks that have not ended: "a" is needed by "b"; remove it after they end, or cancel them first$`, r.stdout)
	require.Contains(t, r.stdout, "removed 0 task(s), 1 error(s)")
	require.Contains(t, r.stderr, "ledger purge: 1 of 1 task(s) not changed")
	// Without --yes too: --yes would change nothing, so it is not asked for.
	r = c.run("ledger", "purge")
	require.Equal(t, 1, r.code, r.stdout)
	require.Contains(t, r.stdout, "would remove 0 task(s), 1 error(s)")
	require.Equal(t, "natscoord: ledger purge: 1 of 1 task(s) not changed\n", r.stderr)
	for _, args := range [][]string{
		{"ledger", "rm", "a"},
		{"ledger", "rm", "--phase", "completed", "--yes"},
		{"ledger", "rm", "--prefix", "a", "--yes"},
	} {
		r := c.run(args...)
		require.Equal(t, 1, r.code, "%v: %s", args, r.stdout)
		require.Contains(t, r.stdout+r.stderr, `"a" is needed by "b"`, args)
	}
	require.Equal(t, kvledger.PhaseCompleted, taskPhase(t, l, "a"), "a is kept")

	// b runs (its need is there), ends, and then a can go.
	finish(t, l, "b", kvledger.StatusCompleted)
	require.Equal(t, map[string]string{"a": "removed", "b": "removed"}, opReport(t, c.ok("--json", "ledger", "purge", "--yes")))

	// purge --all cancels every task that has not ended before it
	// removes any, so a need goes as well as its dependents (x is listed
	// first: its last write is older than y's).
	c.ok("ledger", "admit", "--no-kind", "x")
	finish(t, l, "x", kvledger.StatusCompleted)
	c.ok("ledger", "admit", "--no-kind", "y", "--needs", "x")
	require.Equal(t, map[string]string{"x": "would remove", "y": "would cancel, would remove"},
		opReport(t, c.ok("--json", "ledger", "purge", "--all", "--confirm", defaultLedgerBucket, "--dry-run")))
	out := c.ok("ledger", "purge", "--all", "--confirm", defaultLedgerBucket)
	require.Contains(t, out, "removed 2 task(s), 0 error(s)")
	_, found, err := l.State(natstest.Context(t, 10*time.Second), "x")
	require.NoError(t, err)
	require.False(t, found)
}
