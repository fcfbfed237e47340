package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// ledger ls shows each task's stored status and its phase as kvledger
// names it, and filters by status (--status, the STATUS column), phase
// (--phase, "claimed" for running), each repeated or comma-separated,
// kind, key prefix and count; a bad status or phase is refused naming the
// valid ones, before any connection.
func TestLedgerLsPhaseAndFilters(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "a.ready", "--kind", "x")
	c.ok("ledger", "admit", "a.later", "--kind", "y", "--delay", "1h")
	c.ok("ledger", "admit", "b.run", "--kind", "x")
	c.ok("ledger", "admit", "b.done", "--kind", "x")
	c.ok("ledger", "admit", "c.gone", "--kind", "y")
	l := openTestLedger(t, n)
	claim(t, l, "b.run", "w1")
	finish(t, l, "b.done", kvledger.StatusCompleted)
	_, err := l.Cancel(natstest.Context(t, 10*time.Second), "test", "c.gone", "no longer needed", time.Now())
	require.NoError(t, err)

	out := c.ok("ledger", "ls")
	require.Regexp(t, `(?m)^KEY\s+STATUS\s+PHASE\s+SEQ\s`, out)
	require.Regexp(t, `(?m)^a\.later\s+pending\s+scheduled\s`, out)
	require.Regexp(t, `(?m)^a\.ready\s+pending\s+pending\s`, out)
	require.Regexp(t, `(?m)^b\.run\s+claimed\s+running\s+1\s+w1\s`, out)
	require.Regexp(t, `(?m)^c\.gone\s+failed\s+cancelled\s`, out)

	keys := func(args ...string) []string {
		t.Helper()
		var tasks []struct {
			Key   string         `json:"key"`
			Phase kvledger.Phase `json:"phase"`
		}
		require.NoError(t, json.Unmarshal([]byte(c.ok(append([]string{"--json", "ledger", "ls"}, args...)...)), &tasks))
		out := []string{}
		for _, t := range tasks {
			out = append(out, t.Key+"="+string(t.Phase))
		}
		return out
	}
	require.ElementsMatch(t, []string{"a.later=scheduled", "a.ready=pending", "b.done=completed", "b.run=running", "c.gone=cancelled"}, keys())
	require.ElementsMatch(t, []string{"b.run=running"}, keys("--phase", "running"))
	require.ElementsMatch(t, []string{"b.run=running"}, keys("--phase", "claimed"), "the stored name of running")
	require.ElementsMatch(t, []string{"b.run=running"}, keys("--status", "claimed"))
	require.ElementsMatch(t, []string{"a.later=scheduled", "a.ready=pending"}, keys("--phase", "pending,scheduled"))
	require.ElementsMatch(t, []string{"a.ready=pending", "c.gone=cancelled"}, keys("--phase", "pending", "--phase", "Cancelled"))
	require.ElementsMatch(t, []string{"c.gone=cancelled"}, keys("--status", "failed"), "a cancelled task is stored failed")
	require.ElementsMatch(t, []string{"a.later=scheduled"}, keys("--status", "pending", "--phase", "scheduled"), "both filters apply")
	require.ElementsMatch(t, []string{"a.ready=pending", "b.done=completed", "b.run=running"}, keys("--kind", "x"))
	require.ElementsMatch(t, []string{"b.done=completed", "b.run=running"}, keys("--prefix", "b."))
	require.ElementsMatch(t, []string{"a.later=scheduled"}, keys("--prefix", "a.", "--kind", "y"))
	require.ElementsMatch(t, []string{}, keys("--prefix", "zzz"))

	// --limit lists the first N that match and says how many matched.
	r := c.run("ledger", "ls", "--kind", "x", "--limit", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, strings.Split(strings.TrimSpace(r.stdout), "\n"), 3, r.stdout)
	require.Regexp(t, `(?m)^a\.ready\s`, r.stdout, "the first two in the store's order")
	require.Equal(t, "natscoord: ledger ls: 2 of 3 matching tasks listed (--limit 2)\n", r.stderr)
	require.ElementsMatch(t, []string{"a.ready=pending", "b.done=completed", "b.run=running"}, keys("--kind", "x", "--limit", "3"))

	for _, bad := range [][]string{{"--phase", "done"}, {"--phase", "pending,bogus"}, {"--status", "pending", "--phase", "runing"}} {
		msg := c.fail(append([]string{"ledger", "ls"}, bad...)...)
		require.Contains(t, msg, "--phase: kvledger: unknown phase", bad)
		require.Contains(t, msg, "(one of pending, scheduled, retrying, running, cancelling, completed, failed, cancelled, blocked", bad)
	}
	for _, bad := range [][]string{{"--status", "done"}, {"--status", "pending,bogus"}, {"--status", "runing", "--phase", "running"}} {
		msg := c.fail(append([]string{"ledger", "ls"}, bad...)...)
		require.Contains(t, msg, "--status: kvledger: unknown status", bad)
		require.Contains(t, msg, "(one of pending, claimed, completed, failed, blocked)", bad)
	}
	require.Contains(t, c.fail("ledger", "ls", "--status", "scheduled"), "scheduled is a phase: use --phase scheduled")
	require.Contains(t, c.fail("ledger", "ls", "--state", "pending"), "unknown flag: --state", "no hidden alias")
	require.Contains(t, c.fail("ledger", "ls", "--limit", "-1"), "--limit must be 0 (no limit) or more")
	help := c.ok("ledger", "ls", "--help")
	for _, f := range []string{"--status", "--phase", "--kind", "--prefix", "--limit", "PHASE"} {
		require.Contains(t, help, f)
	}
}

// --status picks by the STATUS column it is listed next to: a task stored
// pending whose phase is scheduled (its run-at ahead) is listed by
// --status pending, where it was left out when --status matched phases.
func TestLedgerLsStatusMatchesTheStoredStatus(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "later", "--delay", "1h")
	out := c.ok("ledger", "ls", "--status", "pending")
	require.Regexp(t, `(?m)^later\s+pending\s+scheduled\s`, out)
	require.NotContains(t, c.ok("ledger", "ls", "--phase", "pending"), "later")
	help := c.ok("ledger", "ls", "--help")
	require.Contains(t, help, "--status picks tasks by their stored status, --phase by their phase")
	require.NotContains(t, help, "--state")
	require.Contains(t, help, "reopen, cancel, rm and purge select by phase, as --phase does")
	// The help names every status and phase, in kvledger's order.
	require.Contains(t, help, "  statuses: pending, claimed, completed, failed, blocked\n")
	require.Contains(t, help, "  phases:   pending, scheduled, retrying, running, cancelling,\n            completed, failed, cancelled, blocked\n")
	require.Contains(t, strings.Join(strings.Fields(c.ok("ledger", "reopen", "--help")), " "),
		"(comma-separated: pending, scheduled, retrying, running, cancelling, completed, failed, cancelled, blocked)")
}

// `ledger ls --limit` counts the stored values that are not records with
// the tasks: they are listed within the limit and counted in "N of M",
// where they were listed past it and left out of the count. The help's
// text stays within the width the other help texts wrap at, and a bad
// phase says that "claimed" is taken for running.
func TestLedgerLsLimitCountsCorruptRows(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "a")
	c.ok("ledger", "admit", "b")
	ctx := natstest.Context(t, 10*time.Second)
	kv, err := n.JS.KeyValue(ctx, defaultLedgerBucket)
	require.NoError(t, err)
	for _, k := range []string{"task.x", "task.y"} {
		_, err = kv.Put(ctx, k, []byte("garbage"))
		require.NoError(t, err)
	}
	rows := func(out string) []string { return strings.Split(strings.TrimSpace(out), "\n")[1:] }

	r := c.run("ledger", "ls", "--limit", "3")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, rows(r.stdout), 3, r.stdout)
	require.Equal(t, 1, strings.Count(r.stdout, corruptStatus), r.stdout)
	require.Equal(t, "natscoord: ledger ls: 3 of 4 matching tasks listed (--limit 3)\n", r.stderr)

	r = c.run("ledger", "ls", "--limit", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, rows(r.stdout), 2, r.stdout)
	require.NotContains(t, r.stdout, corruptStatus)
	require.Equal(t, "natscoord: ledger ls: 2 of 4 matching tasks listed (--limit 2)\n", r.stderr)

	r = c.run("ledger", "ls")
	require.Equal(t, 0, r.code, r.stderr)
	require.Len(t, rows(r.stdout), 4, r.stdout)
	require.Empty(t, r.stderr)

	// With --json the corrupt values are the error; one cut by the limit
	// is not named.
	r = c.run("--json", "ledger", "ls", "--limit", "3")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "3 of 4 matching tasks listed")
	require.Equal(t, 1, strings.Count(r.stderr, `"task.`), r.stderr)

	require.Contains(t, c.fail("ledger", "ls", "--phase", "done"), `"claimed" is accepted for running`)

	help := c.ok("ledger", "ls", "--help")
	long := help[:strings.Index(help, "\nUsage:")]
	for _, line := range strings.Split(long, "\n") {
		require.LessOrEqual(t, len(line), 90, "help line past the wrap width: %q", line)
	}
}
