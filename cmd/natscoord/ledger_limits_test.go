package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `ledger admit --priority` orders the ready tasks of a kind: one `work`
// process running one command at a time starts the highest priority
// first, equal priorities in the order they were admitted; --group is
// stored and shown, and `work --group-limit` refuses a bad limit.
func TestLedgerAdmitPriorityAndGroup(t *testing.T) {
	c, _ := newCLI(t)
	for _, a := range [][]string{{"a", "0"}, {"b", "3"}, {"c", "-1"}, {"d", "3"}, {"e", "0"}} {
		c.ok("ledger", "admit", a[0], "--seq", "1", "--kind", "ord", "--priority", a[1], "--group", "tenant-1")
	}
	shown := c.ok("ledger", "show", "b")
	require.Regexp(t, `priority\s+3`, shown)
	require.Regexp(t, `group\s+tenant-1`, shown)
	require.Contains(t, compact(t, c.ok("--json", "ledger", "show", "c")), `"priority":-1`)

	require.Contains(t, c.fail("ledger", "admit", "--no-kind", "x", "--group", strings.Repeat("g", 129)), "--group")
	require.Contains(t, c.fail("work", "--kind", "ord", "--group-limit", "tenant-1=0", "--", "true"), "--group-limit")

	order := filepath.Join(t.TempDir(), "order")
	work := c.start("work", "--kind", "ord", "--concurrency", "1", "--group-limit", "tenant-1=1",
		"--", "sh", "-c", `echo "$NATSCOORD_TASK_KEY" >> '`+order+`'`)
	r := c.run("ledger", "wait", "a", "b", "c", "d", "e")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	work.stop(t)
	got, err := os.ReadFile(order)
	require.NoError(t, err)
	require.Equal(t, "b\nd\na\ne\nc\n", string(got))
}

// A backlog admitted before `work` starts runs as the README promises:
// higher --priority first, equal ones in the order they were admitted,
// with a task on its last attempt (--max-attempts 1) among them, one
// command at a time with the default claims ahead. Run three times, since
// a disorder from claims racing one another shows only in some runs (each
// command costs about a second under -race; the worker's own test,
// TestBacklogStartsInOrder, runs five).
func TestWorkStartsBacklogInOrder(t *testing.T) {
	c, _ := newCLI(t)
	for round := range 3 {
		kind := fmt.Sprintf("backlog%d", round)
		var keys, want []string
		admit := func(key, prio string, extra ...string) {
			c.ok(append([]string{"ledger", "admit", key, "--seq", "1", "--kind", kind, "--priority", prio}, extra...)...)
			keys = append(keys, key)
			if prio == "0" {
				want = append(want, key)
			}
		}
		for i := range 15 {
			key := fmt.Sprintf("%s-p0-%02d", kind, i)
			if i == 7 {
				admit(key+"-last", "0", "--max-attempts", "1")
			} else {
				admit(key, "0")
			}
			switch i {
			case 3:
				admit(kind+"-p-5", "-5")
			case 10:
				admit(kind+"-p10", "10")
			}
		}
		want = append(append([]string{kind + "-p10"}, want...), kind+"-p-5")
		order := filepath.Join(t.TempDir(), "order")
		work := c.start("work", "--kind", kind, "--concurrency", "1",
			"--", "sh", "-c", `echo "$NATSCOORD_TASK_KEY" >> '`+order+`'`)
		r := c.run(append([]string{"ledger", "wait"}, keys...)...)
		require.Equal(t, waitCompleted, r.code, r.stderr)
		require.Equal(t, 0, work.stop(t).code)
		got, err := os.ReadFile(order)
		require.NoError(t, err)
		require.Equal(t, want, strings.Fields(string(got)), "round %d", round)
	}
}
