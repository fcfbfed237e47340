package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// echoScript prints a JSON result made of the task's environment and its
// stdin; a payload of "fail" exits 3 with a message on stderr.
const echoScript = `in=$(cat)
if [ "$in" = '"fail"' ]; then echo "no luck on attempt $NATSCOORD_TASK_ATTEMPT" >&2; exit 3; fi
printf '{"key":"%s","kind":"%s","fence":%s,"attempt":%s,"max":%s,"bucket":"%s","in":%s}\n' \
  "$NATSCOORD_TASK_KEY" "$NATSCOORD_TASK_KIND" "$NATSCOORD_TASK_FENCE" "$NATSCOORD_TASK_ATTEMPT" \
  "$NATSCOORD_TASK_MAX_ATTEMPTS" "$NATSCOORD_TASK_BUCKET" "$in"`

func TestWorkRunsCommands(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "hello", "--seq", "1", "--kind", "echo", "--task", `{"msg":"hi"}`)
	c.ok("ledger", "admit", "after", "--seq", "1", "--kind", "echo", "--needs", "hello")
	c.ok("ledger", "admit", "bad", "--seq", "1", "--kind", "echo", "--task", `"fail"`, "--max-attempts", "2")
	c.ok("ledger", "admit", "other", "--seq", "1", "--kind", "not-mine")
	c.ok("ledger", "admit", "text", "--seq", "1", "--kind", "plain")

	work := c.start("work", "--kind", "echo", "--concurrency", "2", "--backoff", "10ms", "--", "sh", "-c", echoScript)
	plain := c.start("work", "--kind", "plain", "--", "sh", "-c", "cat; echo done")

	r := c.run("ledger", "wait", "hello", "after", "text")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "hello")), &rec))
	var res map[string]any
	require.NoError(t, json.Unmarshal(rec.Result, &res))
	require.Equal(t, map[string]any{"key": "hello", "kind": "echo", "fence": float64(rec.Fence), "attempt": float64(1),
		"max": float64(3), "bucket": defaultLedgerBucket, "in": map[string]any{"msg": "hi"}}, res)
	// Plain text output becomes a JSON string, without its last newline.
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "text")), &rec))
	require.JSONEq(t, `"done"`, string(rec.Result))

	// A non-zero exit is retried, then fails with the stderr tail.
	r = c.run("ledger", "wait", "bad")
	require.Equal(t, waitFailed, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "bad")), &rec))
	require.Equal(t, 2, rec.Attempts)
	require.Contains(t, rec.LastError, "command exited with status 3: no luck on attempt 2")
	shown := c.ok("ledger", "show", "bad")
	require.Regexp(t, `(?m)^kind\s+echo$`, shown)
	require.Regexp(t, `(?m)^attempts\s+2 of 2$`, shown)
	require.Regexp(t, `(?m)^last error\s+command exited with status 3: no luck on attempt 2$`, shown)
	require.Regexp(t, `(?m)^result\s+\{"key":"hello","kind":"echo",`, c.ok("ledger", "show", "hello"))

	// A kind nobody handles stays pending.
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "other")), &rec))
	require.Equal(t, kvledger.StatusPending, rec.Status)

	out := work.stop(t)
	require.Equal(t, 0, out.code, out.stderr)
	require.Regexp(t, `(?m)^completed\s+hello\s+attempt 1\s+fence \d+`, out.stdout)
	require.Regexp(t, `(?m)^retried\s+bad\s+attempt 1 .*command exited with status 3`, out.stdout)
	require.Regexp(t, `(?m)^failed\s+bad\s+attempt 2 `, out.stdout)
	require.Contains(t, out.stdout, "natscoord work: stopped: ")
	require.Contains(t, out.stderr, "no luck on attempt 1")
	require.Equal(t, 0, plain.stop(t).code)
}

// A drain stops a running command with SIGTERM and gives its task back
// (pending, the attempt not counted); a command that ignores SIGTERM is
// killed after --grace.
func TestWorkDrainStopsCommand(t *testing.T) {
	for _, tc := range []struct {
		name, script string
	}{
		{"sigterm", `trap 'echo term > "$MARK"; exit 143' TERM; echo started > "$STARTED"; sleep 30 & wait`},
		{"sigkill", `trap '' TERM; echo started > "$STARTED"; sleep 30`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newCLI(t)
			dir := t.TempDir()
			mark, started := filepath.Join(dir, "mark"), filepath.Join(dir, "started")
			t.Setenv("MARK", mark)
			t.Setenv("STARTED", started)
			c.ok("ledger", "admit", "slow", "--seq", "1", "--kind", "slow")
			work := c.start("work", "--kind", "slow", "--drain", "0s", "--grace", "300ms", "--", "sh", "-c", tc.script)
			natstest.Eventually(t, 20*time.Second, func() bool { _, err := os.Stat(started); return err == nil })
			begin := time.Now()
			r := work.stop(t)
			require.Equal(t, 0, r.code, r.stderr)
			require.Less(t, time.Since(begin), 10*time.Second)
			if tc.name == "sigterm" {
				b, err := os.ReadFile(mark)
				require.NoError(t, err)
				require.Equal(t, "term\n", string(b))
			}
			require.Contains(t, r.stdout, "1 given back")
			var rec kvledger.TaskState
			require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "slow")), &rec))
			require.Equal(t, kvledger.StatusPending, rec.Status, "given back")
			require.Equal(t, 0, rec.Attempts, "a drained attempt does not count")
		})
	}
}

// Cancelling a running task stops its command; `ledger wait` says
// cancelled.
func TestWorkCancelledTask(t *testing.T) {
	c, n := newCLI(t)
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	t.Setenv("STARTED", started)
	c.ok("ledger", "admit", "long", "--seq", "1", "--kind", "long")
	work := c.start("work", "--kind", "long", "--", "sh", "-c", `echo x > "$STARTED"; sleep 30 & wait`)
	natstest.Eventually(t, 20*time.Second, func() bool { _, err := os.Stat(started); return err == nil })
	w := c.start("ledger", "wait", "long")
	l := openTestLedger(t, n)
	_, err := l.Cancel(natstest.Context(t, 10*time.Second), "operator", "long", "not needed", time.Now())
	require.NoError(t, err)
	r := w.result(t)
	require.Equal(t, waitCancelled, r.code, r.stderr)
	require.Regexp(t, `(?m)^long\s+cancelled\s+1\s+-\s+not needed`, r.stdout)
	out := work.stop(t)
	require.Equal(t, 0, out.code, out.stderr)
	require.Regexp(t, `(?m)^cancelled\s+long\s+attempt 1`, out.stdout)
}

func TestWorkBadInput(t *testing.T) {
	c, _ := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"work", "--", "cat"}, `"kind" not set`},
		{[]string{"work", "--kind", "k"}, "give the command after --"},
		{[]string{"work", "--kind", "k", "cat"}, "give the command after --"},
		{[]string{"work", "--kind", "k", "x", "--", "cat"}, "give the command after --"},
		{[]string{"work", "--kind", "", "--", "cat"}, "--kind must not be empty"},
		{[]string{"work", "--kind", "k", "--concurrency", "0", "--", "cat"}, "--concurrency must be at least 1"},
		{[]string{"work", "--kind", "k", "--max-attempts", "0", "--", "cat"}, "--max-attempts must be at least 1"},
		{[]string{"work", "--kind", "k", "--grace", "0s", "--", "cat"}, "--grace must be positive"},
		{[]string{"work", "--kind", "k", "--backoff", "-1s", "--", "cat"}, "--backoff must be positive"},
		{[]string{"work", "--kind", "k", "--result-limit", "999999999", "--", "cat"}, "--result-limit must be"},
		{[]string{"work", "--kind", "k", "--ttl", "100ms", "--", "cat"}, "ClaimTTL"},
	} {
		require.Contains(t, c.fail(tc.args...), tc.want, tc.args)
	}
	// Bad input to admit's runtime flags writes nothing.
	for _, args := range [][]string{
		{"ledger", "admit", "a", "--seq", "1", "--delay", "-1s"},
		{"ledger", "admit", "a", "--seq", "1", "--delay", "1s", "--run-at", "2030-01-01T00:00:00Z"},
		{"ledger", "admit", "a", "--seq", "1", "--run-at", "tomorrow"},
		{"ledger", "admit", "a", "--seq", "1", "--max-attempts", "-2"},
		{"ledger", "admit", "a", "--seq", "1", "--kind", strings.Repeat("k", kvledger.MaxKindBytes+1)},
	} {
		c.fail(args...)
	}
	var tasks []kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "ls")), &tasks))
	require.Empty(t, tasks, "no bad command wrote a task")
}

// A command that cannot start fails its task at once (every attempt
// would fail alike).
func TestWorkMissingCommand(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "x", "--seq", "1", "--kind", "k")
	work := c.start("--json", "work", "--kind", "k", "--", "/nonexistent/natscoord-test-binary")
	r := c.run("ledger", "wait", "x")
	require.Equal(t, waitFailed, r.code, r.stderr)
	require.Regexp(t, `(?m)^x\s+failed\s+1\s+-\s+.*cannot start the command`, r.stdout)
	out := work.stop(t)
	require.Equal(t, 0, out.code, out.stderr)
	// With --json, one JSON line per finished attempt and nothing else.
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &line), out.stdout)
	require.Equal(t, "x", line["key"])
	require.Equal(t, "failed", line["result"])
	require.Contains(t, line["error"], "cannot start the command")
}

// Delayed admission: the worker starts the task only once its time came.
func TestWorkDelayedTask(t *testing.T) {
	c, _ := newCLI(t)
	admitted := time.Now()
	c.ok("ledger", "admit", "later", "--seq", "1", "--kind", "k", "--delay", "1500ms")
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "later")), &rec))
	require.False(t, rec.RunAt.IsZero())
	work := c.start("work", "--kind", "k", "--", "sh", "-c", `date +t%s.%N`)
	r := c.run("ledger", "wait", "later")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "later")), &rec))
	var ranAt string
	require.NoError(t, json.Unmarshal(rec.Result, &ranAt))
	var sec, nsec int64
	_, err := fmt.Sscanf(ranAt, "t%d.%d", &sec, &nsec)
	require.NoError(t, err)
	ran := time.Unix(sec, nsec)
	require.False(t, ran.Before(rec.RunAt), "ran at %v, run-at %v", ran, rec.RunAt)
	require.GreaterOrEqual(t, ran.Sub(admitted), 1500*time.Millisecond)
	require.Equal(t, 0, work.stop(t).code)
}
