package main

import (
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
