package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// requireColumn checks that word (or, in the header, head) starts at the
// same display column in every line.
func requireColumn(t *testing.T, lines []string, head, word string) {
	t.Helper()
	col := -1
	for _, l := range lines {
		i := strings.Index(l, head)
		if i < 0 {
			i = strings.Index(l, word)
		}
		require.GreaterOrEqual(t, i, 0, "%q in %q", word, l)
		w := displayWidth(l[:i])
		if col < 0 {
			col = w
		}
		require.Equal(t, col, w, "%s at display column %d: %q", head, col, l)
	}
}

// One record with hundreds of needs does not widen every row of `ledger
// ls`: cells are truncated with a marker, so each row stays bounded;
// --json and `ledger show` keep every need.
func TestLedgerLsRowsBounded(t *testing.T) {
	c, _ := newCLI(t)
	// 300 needs of 32 characters: a 10 KB cell (admitting more needs
	// takes a read per need).
	needs := make([]string, 300)
	for i := range needs {
		needs[i] = fmt.Sprintf("dependency-with-a-long-name-%04d", i)
	}
	r := c.run("--timeout", "30s", "ledger", "admit", "--no-kind", "big", "--seq", "1", "--needs", strings.Join(needs, ","))
	require.Equal(t, 0, r.code, r.stderr)
	// The note on needs without a record names a few and counts the rest.
	require.Contains(t, r.stderr, `"dependency-with-a-long-name-0004", and 295 more have no record yet`)
	require.Less(t, len(r.stderr), 400)
	c.ok("ledger", "admit", "--no-kind", "small", "--seq", "1")
	long := strings.Repeat("k", 200)
	c.ok("ledger", "admit", "--no-kind", long, "--seq", "1")

	out := c.ok("ledger", "ls")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 4)
	for _, l := range lines {
		require.LessOrEqual(t, displayWidth(l), 8*(maxCellWidth+2), "a bounded row: %.200q", l)
	}
	require.Contains(t, out, "dependency-with-a-long-name-0000,")
	require.Contains(t, out, truncMarker)
	requireColumn(t, lines, "PHASE", "pending")

	var tasks []kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "ls")), &tasks))
	found := false
	for _, task := range tasks {
		if task.Key == "big" {
			found = true
			require.Len(t, task.Needs, len(needs))
		}
	}
	require.True(t, found)
	require.Contains(t, c.ok("ledger", "show", "big"), strings.Join(needs, ","), "show prints the whole value")
	require.Contains(t, c.ok("ledger", "ls"), long[:maxCellWidth-1]+truncMarker)
}

// `events tail` keeps its columns in place for any key or source: a long
// or wide value is truncated to its column with a marker.
func TestEventsTailColumnsAligned(t *testing.T) {
	c, _ := newCLI(t)
	keys := []string{"x", strings.Repeat("long-key-", 8), "日本語のキー日本語のキー日本語", "a"}
	c.ok("ledger", "admit", "--no-kind", keys[0], "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", keys[1], "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", keys[2], "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", keys[3], "--seq", "1", "--needs", keys[0])
	out := c.ok("events", "tail", "--durable", "aligned", "--count", "4")
	t.Log("\n" + out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 5)
	requireColumn(t, lines, "STATUS", "pending")
	last := -1
	for _, l := range lines {
		w := displayWidth(l[:strings.LastIndex(l, " ")])
		if last < 0 {
			last = w
		}
		require.Equal(t, last, w, "the last column at display column %d: %q", last, l)
	}
	require.Contains(t, out, "long-key-long"+"-key-")
	require.Contains(t, out, truncMarker)

	// A long source (bucket name) is cut to its column too.
	long := strings.Repeat("bucket_", 6)
	c.ok("ledger", "--bucket", long, "admit", "--no-kind", "k", "--seq", "1", "--create")
	out = c.ok("events", "tail", "--bucket", long, "--durable", "aligned", "--count", "1")
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2)
	requireColumn(t, lines, "STATUS", "pending")
	require.Contains(t, out, truncMarker)
}
