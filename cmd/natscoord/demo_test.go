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

func TestDemoRunsToCompletion(t *testing.T) {
	t.Setenv("NATS_URL", "")
	r := runCLI(t, "demo")
	t.Log("\n" + r.stdout)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	for _, want := range []string{
		"was elected leader",
		"ledger.completed  integ-test failed",
		"ledger.blocked    package    blocked   by integ-test fence",
		"ledger.taken_over docs",
		"TASK        STATUS     OWNER     FENCE  BLOCKED-BY",
		"12 tasks: 8 completed, 1 failed, 3 blocked",
		"was refused (kvledger: fence token is stale",
		"outcome: as predicted",
	} {
		require.Contains(t, r.stdout, want)
	}
	// Every event line, blocked ones included, keeps its columns.
	var events []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, "  ledger.") {
			events = append(events, l)
		}
	}
	require.NotEmpty(t, events)
	requireColumn(t, events, " fence ", " fence ")
}

func TestDemoJSON(t *testing.T) {
	t.Setenv("NATS_URL", "")
	r := runCLI(t, "demo", "--json", "--workers", "3")
	require.Equal(t, 0, r.code, r.stderr)
	var s demoSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &s), r.stdout)
	require.True(t, s.OK, s.Problems)
	require.Equal(t, demoCounts{Tasks: 12, Completed: 8, Failed: 1, Blocked: 3}, s.Counts)
	require.Equal(t, 1, s.Leaders)
	require.True(t, strings.HasPrefix(s.Leader, "worker-"))
	require.True(t, s.Fencing.LateRefused)
	require.Greater(t, s.Fencing.TakenFence, s.Fencing.Fence)
	for _, task := range s.Tasks {
		require.Equal(t, task.Expected, task.Status, task.Task)
		if task.Status == string(kvledger.StatusBlocked) {
			require.Equal(t, string(demoFailing), task.BlockedBy)
		}
	}
}

// The demo also runs against an existing server and removes its ledger
// bucket afterwards.
func TestDemoAgainstServer(t *testing.T) {
	n := natstest.WithServer(t)
	r := runCLI(t, "demo", "--server", n.Server.ClientURL(), "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var s demoSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &s))
	require.True(t, s.OK, s.Problems)
	ctx := natstest.Context(t, 5*time.Second)
	_, err := n.JS.KeyValue(ctx, s.Bucket)
	require.Error(t, err, "the demo bucket is deleted after a run against --server")
	requireDemoLeftNothing(t, n, s.Bucket)
}

func TestDemoBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--workers", "1"},
		{"demo", "--workers", "x"},
		{"demo", "--deadline", "0s"},
		{"demo", "extra"},
	} {
		r := runCLI(t, args...)
		require.NotEqual(t, 0, r.code, args)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
		require.Empty(t, r.stdout)
	}
}

func TestDemoExpectedOutcome(t *testing.T) {
	exp := demoExpected()
	require.Len(t, exp, len(demoGraph))
	require.Equal(t, kvledger.StatusFailed, exp["integ-test"].status)
	for _, k := range []kvledger.IdempotencyKey{"package", "publish", "announce"} {
		require.Equal(t, expectedTask{kvledger.StatusBlocked, demoFailing}, exp[k], k)
	}
	require.Equal(t, kvledger.StatusCompleted, exp["site"].status)
}

// A run that cannot finish in time still prints its summary, names the
// problem in one line and exits non-zero.
func TestDemoDeadline(t *testing.T) {
	t.Setenv("NATS_URL", "")
	r := runCLI(t, "demo", "--deadline", "300ms")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stdout, "outcome: NOT as predicted")
	require.Equal(t, "natscoord: demo: unexpected outcome: demo did not finish within --deadline 300ms\n", r.stderr)
}
