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

// ledger ls shows each task's kind and its phase as kvledger names it,
// and filters by phase (--phase, "claimed" for running), repeated or
// comma-separated, kind, key prefix and count; a bad phase is refused
// naming the valid ones, before any connection. The stored status is in
// --json only, and the deprecated --status still filters by it.
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
	require.Regexp(t, `(?m)^KEY\s+KIND\s+PHASE\s+ATTEMPTS\s+OWNER\s+NEEDS\s+BLOCKED-BY\s+ERROR$`, out)
	require.Regexp(t, `(?m)^a\.later\s+y\s+scheduled\s`, out)
	require.Regexp(t, `(?m)^a\.ready\s+x\s+pending\s`, out)
	require.Regexp(t, `(?m)^b\.run\s+x\s+running\s+0/3\s+w1\s`, out)
	require.Regexp(t, `(?m)^c\.gone\s+y\s+cancelled\s+0/3\s+-\s+-\s+-\s+no longer needed$`, out)
	require.NotRegexp(t, `\b(claimed|STATUS)\b`, out, "the stored status is in --json only")

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
	require.ElementsMatch(t, []string{"a.later=scheduled", "a.ready=pending"}, keys("--phase", "pending,scheduled"))
	require.ElementsMatch(t, []string{"a.ready=pending", "c.gone=cancelled"}, keys("--phase", "pending", "--phase", "Cancelled"))
	require.ElementsMatch(t, []string{"c.gone=cancelled"}, keys("--phase", "cancelled"))
	require.ElementsMatch(t, []string{}, keys("--phase", "failed"), "a cancelled task is not failed")
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

	for _, bad := range [][]string{{"--phase", "done"}, {"--phase", "pending,bogus"}, {"--kind", "x", "--phase", "runing"}} {
		msg := c.fail(append([]string{"ledger", "ls"}, bad...)...)
		require.Contains(t, msg, "--phase: kvledger: unknown phase", bad)
		require.Contains(t, msg, "(one of pending, scheduled, retrying, running, cancelling, completed, failed, cancelled, blocked", bad)
	}
	require.Contains(t, c.fail("ledger", "ls", "--limit", "-1"), "--limit must be 0 (no limit) or more")
	help := c.ok("ledger", "ls", "--help")
	for _, f := range []string{"--phase", "--kind", "--prefix", "--under", "--schedule", "--limit", "--wide", "PHASE", "KIND", "ATTEMPTS", "ERROR"} {
		require.Contains(t, help, f)
	}
}

// --status, deprecated, still picks by the stored status (in --json
// only), saying on stderr to use --phase; a bad one is refused naming the
// valid ones, and a phase given to it is pointed to --phase. --state, the
// operator actions' deprecated name of --phase, is --phase for ls too.
// The help names neither, and every phase in kvledger's order.
func TestLedgerLsStatusIsDeprecated(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "later", "--delay", "1h")
	r := c.run("ledger", "ls", "--status", "pending")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^later\s+-\s+scheduled\s`, r.stdout)
	require.Equal(t, "natscoord: ledger ls: --status is deprecated: use --phase, or read \"status\" in --json\n", r.stderr)
	require.NotContains(t, c.ok("ledger", "ls", "--phase", "pending"), "later")
	require.Contains(t, c.ok("--json", "ledger", "ls"), `"status": "pending"`)
	r = c.run("ledger", "ls", "--state", "scheduled")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^later\s`, r.stdout)
	require.Contains(t, r.stderr, "--state is deprecated: use --phase")
	for _, bad := range [][]string{{"--status", "done"}, {"--status", "pending,bogus"}} {
		r := c.run(append([]string{"ledger", "ls"}, bad...)...)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stderr, "--status: kvledger: unknown status", bad)
		require.Contains(t, r.stderr, "(one of pending, claimed, completed, failed, blocked)", bad)
	}
	require.Contains(t, c.run("ledger", "ls", "--status", "scheduled").stderr, "scheduled is a phase: use --phase scheduled")

	help := c.ok("ledger", "ls", "--help")
	require.NotContains(t, help, "--status")
	require.NotContains(t, help, "--state")
	require.Contains(t, help, "  phases: pending, scheduled, retrying, running, cancelling,\n          completed, failed, cancelled, blocked\n")
	for _, cmd := range []string{"ls", "reopen", "cancel", "rm", "purge"} {
		h := c.ok("ledger", cmd, "--help")
		require.Contains(t, strings.Join(strings.Fields(h), " "),
			"(repeated or comma-separated: pending, scheduled, retrying, running, cancelling, completed, failed, cancelled, blocked;", cmd)
		require.NotContains(t, h, "--state", cmd)
	}
}

// `ledger ls --limit` counts the stored values that are not records with
// the tasks: they are listed within the limit and counted in "N of M",
// where they were listed past it and left out of the count. The help's
// text stays within the width the other help texts wrap at, and a bad
// phase says that "claimed" is taken for running.
func TestLedgerLsLimitCountsCorruptRows(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "a")
	c.ok("ledger", "admit", "--no-kind", "b")
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
