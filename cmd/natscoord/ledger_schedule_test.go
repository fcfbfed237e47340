package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// Malformed and impossible specs are refused with a clear error and a
// non-zero exit, with nothing written.
func TestLedgerScheduleRefusesBadSpecs(t *testing.T) {
	c, n := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--spec", "0 0 31 2 *", "--kind", "k"}, "never runs: no date matches it"},
		{[]string{"--spec", "61 * * * *", "--kind", "k"}, `"61" outside 0-59`},
		{[]string{"--spec", "* * *", "--kind", "k"}, "want 5 cron fields"},
		{[]string{"--spec", "@every 10ms", "--kind", "k"}, "at least 1s"},
		{[]string{"--spec", "@daily", "--kind", "k", "--tz", "Mars/Olympus"}, `time zone "Mars/Olympus"`},
		{[]string{"--spec", "@daily"}, "--kind is required"},
		{[]string{"--kind", "k"}, `"spec" not set`},
		{[]string{"--spec", "@daily", "--kind", "k", "--task", "{"}, "not JSON"},
	} {
		line := c.fail(append([]string{"ledger", "schedule", "add", "x"}, tc.args...)...)
		require.Contains(t, line, tc.want, tc.args)
	}
	require.False(t, bucketExists(t, n, defaultLedgerBucket), "a refused schedule creates nothing")
	help := c.ok("ledger", "schedule", "add", "--help")
	require.Contains(t, help, "Missed periods run once")
}

// A schedule declared from the CLI is run by running workers (two
// `natscoord work`): each period's task is admitted once and runs once,
// with its payload's big integer intact; ls shows it with its next
// period; rm stops it.
func TestLedgerScheduleFromCLI(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "warmup", "--kind", "tick") // creates the ledger
	for range 2 {
		w := c.start("work", "--kind", "tick", "--", "cat")
		w.line(t, 20*time.Second, "Ctrl-C drains and stops")
	}
	out := c.ok("ledger", "schedule", "add", "tick", "--spec", "@every 1s", "--kind", "tick", "--task", `{"n":18446744073709551617}`)
	require.Contains(t, out, "schedule tick stored: @every 1s, kind tick")
	line := c.fail("ledger", "schedule", "add", "tick", "--spec", "@every 2s", "--kind", "tick")
	require.Contains(t, line, `schedule already exists: "tick" (add --replace to replace it)`)

	ls := c.ok("ledger", "schedule", "ls")
	require.Regexp(t, `(?m)^tick\s+@every 1s\s+UTC\s+tick\s+\d{4}-\d\d-\d\dT`, ls)
	var listed []scheduleJSON
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "schedule", "ls")), &listed))
	require.Len(t, listed, 1)
	require.JSONEq(t, `{"n":18446744073709551617}`, string(listed[0].Task))
	require.Contains(t, string(listed[0].Task), "18446744073709551617")

	store, err := kvledger.NewKVStore(natstest.Context(t, 10*time.Second), n.JS, kvledger.KVStoreConfig{Bucket: defaultLedgerBucket})
	require.NoError(t, err)
	periods := func(name string) map[time.Time]kvledger.TaskState {
		out := map[time.Time]kvledger.TaskState{}
		require.NoError(t, store.Range(natstest.Context(t, 10*time.Second), func(s kvledger.TaskState) bool {
			if got, start, ok := worker.ParsePeriodKey(s.Key); ok && got == name && s.Status == kvledger.StatusCompleted {
				out[start] = s
			}
			return true
		}))
		return out
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return len(periods("tick")) >= 2 }, "two periods of tick ran")
	for _, rec := range periods("tick") {
		require.Equal(t, 1, rec.Attempts, "%s ran once", rec.Key)
		require.JSONEq(t, `{"n":18446744073709551617}`, string(rec.Result))
		require.Contains(t, string(rec.Result), "18446744073709551617")
	}

	require.Contains(t, c.ok("ledger", "schedule", "rm", "tick"), "schedule tick removed")
	removed := time.Now()
	require.Contains(t, c.fail("ledger", "schedule", "rm", "tick"), "no such schedule")
	// Each worker applies the removal as its watch delivers it and
	// admits due periods on its own timer: one a few milliseconds behind
	// at a boundary may still admit that period of tick, never a later one.
	c.ok("ledger", "schedule", "add", "tock", "--spec", "@every 1s", "--kind", "tick")
	natstest.Eventually(t, 30*time.Second, func() bool { return len(periods("tock")) >= 2 }, "two periods of tock ran")
	for p := range periods("tick") {
		require.False(t, p.After(removed.Add(time.Second)), "tick ran at %s, over a period after its removal at %s", p, removed)
	}
	require.True(t, strings.HasPrefix(c.ok("ledger", "schedule", "ls"), "NAME"))
}

// A stored value that is not a schedule: ls lists the others and fails
// naming it, rm says how to remove it, and rm --rev removes it.
func TestLedgerScheduleCorruptValue(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "schedule", "add", "good", "--spec", "@daily", "--kind", "k")
	ctx := natstest.Context(t, 10*time.Second)
	kv, err := n.JS.KeyValue(ctx, defaultLedgerBucket)
	require.NoError(t, err)
	rev, err := kv.Put(ctx, "sched.bad", []byte("not json"))
	require.NoError(t, err)

	r := c.run("ledger", "schedule", "ls")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stdout, "good")
	require.Contains(t, r.stderr, `schedule "bad" revision`)
	line := c.fail("ledger", "schedule", "rm", "bad")
	require.Contains(t, line, "remove it with --rev")
	c.ok("ledger", "schedule", "rm", "bad", "--rev", strconv.FormatUint(rev, 10))
	require.NotContains(t, c.ok("ledger", "schedule", "ls"), "bad")
}
