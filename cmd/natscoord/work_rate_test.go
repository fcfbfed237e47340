package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `work --rate-limit 2/2s` starts at most 2 commands of its kind in any
// 2 s, though it may run 4 at once, and every task completes with its one
// attempt; a limit the server cannot keep is refused before anything
// runs.
func TestWorkRateLimit(t *testing.T) {
	c, _ := newCLI(t)
	require.Contains(t, c.fail("work", "--kind", "api", "--rate-limit", "0/1s", "--", "true"), "--rate-limit")
	require.Contains(t, c.fail("work", "--kind", "api", "--rate-limit", "3/1500ms", "--", "true"), "whole seconds")
	require.Contains(t, c.fail("work", "--kind", "api", "--rate-limit", "3", "--", "true"), "N/PERIOD")
	require.Contains(t, c.fail("work", "--kind", "api", "--group-rate-limit", "t=3/0s", "--", "true"), "--group-rate-limit")

	const n = 5
	var keys []string
	for i := range n {
		k := "api-" + strconv.Itoa(i)
		c.ok("ledger", "admit", k, "--seq", "1", "--kind", "api")
		keys = append(keys, k)
	}
	starts := filepath.Join(t.TempDir(), "starts")
	work := c.start("work", "--kind", "api", "--concurrency", "4", "--rate-limit", "2/2s",
		"--", "sh", "-c", `date +%s.%N >> '`+starts+`'`)
	r := c.run(append([]string{"ledger", "wait"}, keys...)...)
	require.Equal(t, waitCompleted, r.code, r.stderr)
	require.Equal(t, 0, work.stop(t).code)
	for _, k := range keys {
		require.Contains(t, compact(t, c.ok("--json", "ledger", "show", k)), `"attempts":1,`, k)
	}
	raw, err := os.ReadFile(starts)
	require.NoError(t, err)
	var at []time.Time
	for _, l := range strings.Fields(string(raw)) {
		f, err := strconv.ParseFloat(l, 64)
		require.NoError(t, err, l)
		at = append(at, time.Unix(0, int64(f*1e9)))
	}
	require.Len(t, at, n)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	for i := 2; i < n; i++ {
		// A command starts after its token by a claim and a fork: a
		// window of 2 s less half a second holds at most 2 starts.
		require.GreaterOrEqual(t, at[i].Sub(at[i-2]), 1500*time.Millisecond, "command starts %v", at)
	}
}
