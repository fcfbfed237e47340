package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// `ledger pause KIND` holds the kind's tasks from a running `natscoord
// work`, `ledger stats` lists it, and `ledger resume` lets them run.
func TestLedgerPauseAndResumeFromCLI(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "first", "--kind", "job")
	work := c.start("work", "--kind", "job", "--", "sh", "-c", "cat")
	r := c.run("ledger", "wait", "first")
	require.Equal(t, waitCompleted, r.code, r.stderr)

	out := c.ok("ledger", "pause", "job")
	require.Contains(t, out, "kind job paused (its schedules keep admitting)")
	require.Contains(t, c.fail("ledger", "pause", "job"), "kind is paused already")
	c.ok("ledger", "admit", "held", "--kind", "job")
	// The worker runs a task within milliseconds; paused, it does not.
	r = c.run("ledger", "wait", "held", "--for", "1s")
	require.Equal(t, waitGaveUp, r.code, "held ran while its kind was paused: %s", r.stderr)

	stats := c.ok("ledger", "stats")
	require.Contains(t, stats, "paused: job\n")
	var js struct {
		Paused []pausedKind `json:"paused"`
		Total  int          `json:"total"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "stats")), &js))
	require.Equal(t, 2, js.Total)
	require.Len(t, js.Paused, 1)
	require.Equal(t, "job", js.Paused[0].Kind)
	require.Equal(t, "natscoord-cli", string(js.Paused[0].Actor))
	var shown struct {
		Attempts int `json:"attempts"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "held")), &shown))
	require.Zero(t, shown.Attempts, "a held task uses no attempt")

	require.Contains(t, c.ok("ledger", "resume", "job"), "kind job resumed")
	r = c.run("ledger", "wait", "held", "--for", "20s")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	require.Contains(t, c.fail("ledger", "resume", "job"), "kind is not paused")
	require.NotContains(t, c.ok("ledger", "stats"), "paused:")
	require.Contains(t, c.ok("ledger", "pause", "job", "--schedules"), "its schedules paused too")
	work.stop(t)
}
