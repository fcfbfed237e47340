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

// demoChildren readies a demo run by a test: its `natscoord work`
// children are the test binary (os.Executable), which TestMain runs as
// natscoord; NATS_URL, which the demo does not follow, is cleared.
func demoChildren(t *testing.T) {
	t.Helper()
	t.Setenv("NATS_URL", "")
}

// requireInOrder checks that each of lines appears in out after the one
// before it.
func requireInOrder(t *testing.T, out string, lines ...string) {
	t.Helper()
	at := 0
	for _, l := range lines {
		i := strings.Index(out[at:], l)
		require.GreaterOrEqual(t, i, 0, "%q after %q in:\n%s", l, out[:at], out)
		at += i + len(l)
	}
}

// make demo, the README's first command: the task graph runs through Go
// services (tasks.Client) and `natscoord work` processes, and the report
// says in plain words what ran, in what order, what failed and what it
// blocked, the retry, the leader and (on Linux) the crash; the ledger's
// detail stays behind --detail.
func TestDemoRunsToCompletion(t *testing.T) {
	demoChildren(t)
	r := runCLI(t, "demo")
	t.Log("\n" + r.stdout)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	for _, want := range []string{
		"svc-1..svc-3    Go services: tasks.Client",
		"work-1, work-2  natscoord work --kind shell -- sh -c",
		"was elected leader: it submits the tasks (Submit with needs) and waits for them (Wait)",
		"lint        done by work-", // a shell task, run by natscoord work
		"compile     done by svc-",  // a Go task, run by a tasks.Client worker
		"12 tasks: 8 completed, 1 failed, 3 blocked in ",
		"  failed     integ-test (permanent: integration tests failed)\n",
		"  blocked    package, publish, announce: they need integ-test, which failed, so they never ran\n",
		"  retried    fetch-deps: attempt 1 failed (package registry timed out), attempt 2 completed\n",
		"  leader     svc-",
		"outcome: as predicted\n",
		"natscoord demo --detail",
	} {
		require.Contains(t, r.stdout, want)
	}
	// What ran, in its order: the retry before its success, the failure
	// before what it blocked, the leader's Wait after every task.
	requireInOrder(t, r.stdout,
		"was elected leader",
		"fetch-deps  attempt 1 failed (package registry timed out): retried after a backoff",
		"fetch-deps  done by svc-", " (attempt 2)",
		"integ-test  FAILED on svc-",
		"publish     blocked: it needs integ-test, which failed",
		"Wait returned: every task has ended",
		"12 tasks:")
	if demoCanCrash {
		requireInOrder(t, r.stdout,
			"docs        runs on work-", "as a crash would",
			"docs        taken over by work-", "docs        done by work-", " (attempt 2)",
			"  crash      work-")
	}
	// The ledger's detail is not part of the plain report.
	for _, detail := range []string{"fence", "rev ", "ledger.", "lease"} {
		require.NotContains(t, r.stdout, detail)
	}
}

// --detail adds the ledger underneath: every event with its fence token
// and revision, the final records and a stale fence refused.
func TestDemoDetail(t *testing.T) {
	demoChildren(t)
	r := runCLI(t, "demo", "--detail")
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{
		"12 tasks: 8 completed, 1 failed, 3 blocked",
		"The ledger underneath (bucket natscoord_demo_",
		"ledger.completed  integ-test failed    svc-",
		"ledger.blocked    package    blocked   by integ-test fence",
		"TASK        KIND   STATUS     OWNER   ATTEMPTS  FENCE  BLOCKED-BY",
		"claims:  each worker's claims are held by one lease",
		"leader:  svc-",
		"outcome: as predicted",
	} {
		require.Contains(t, r.stdout, want)
	}
	if demoCanCrash {
		require.Contains(t, r.stdout, "ledger.taken_over docs       claimed   work-")
		require.Regexp(t, `fencing: work-\d held docs with fence \d+ when it was killed; work-\d took it over with fence \d+`, r.stdout)
		require.Contains(t, r.stdout, "was refused (kvledger: fence token is stale")
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
	demoChildren(t)
	r := runCLI(t, "demo", "--json", "--workers", "2")
	require.Equal(t, 0, r.code, r.stderr)
	var s demoSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &s), r.stdout)
	require.True(t, s.OK, s.Problems)
	require.Equal(t, demoCounts{Tasks: 12, Completed: 8, Failed: 1, Blocked: 3}, s.Counts)
	require.Equal(t, 1, s.Leaders)
	require.Equal(t, 2, s.Services)
	require.True(t, strings.HasPrefix(s.Leader, "svc-"))
	for _, task := range s.Tasks {
		require.Equal(t, task.Expected, task.Status, task.Task)
		if task.Status == string(kvledger.StatusBlocked) {
			require.Equal(t, string(demoFailing), task.BlockedBy)
		}
		owner := "svc-"
		if task.Kind == (shellStep{}).Kind() {
			owner = "work-"
		}
		if task.Status != string(kvledger.StatusBlocked) {
			require.True(t, strings.HasPrefix(task.Owner, owner), "%s ran on %s", task.Task, task.Owner)
		}
		if task.Task == string(demoRetried) {
			require.Equal(t, 2, task.Attempts)
		}
	}
	if demoCanCrash {
		require.NotNil(t, s.Crash)
		require.True(t, s.Crash.LateRefused)
		require.Greater(t, s.Crash.TakenFence, s.Crash.Fence)
		require.NotEqual(t, s.Crash.Worker, s.Crash.TakenBy)
	}
}

// The demo also runs against an existing server and removes its ledger
// bucket afterwards.
func TestDemoAgainstServer(t *testing.T) {
	demoChildren(t)
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
	demoChildren(t)
	r := runCLI(t, "demo", "--deadline", "300ms")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stdout, "outcome: NOT as predicted")
	require.Equal(t, "natscoord: demo: unexpected outcome: demo did not finish within --deadline 300ms\n", r.stderr)
}
