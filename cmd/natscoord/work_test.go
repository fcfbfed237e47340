package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
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
			require.Contains(t, r.stderr, "natscoord work: draining: 1 running, given --drain 0s to finish, then SIGTERM (SIGKILL --grace 300ms later)")
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
	c, n := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"work", "--", "cat"}, `"kind" not set`},
		{[]string{"work", "--kind", "k"}, "give the command after --"},
		{[]string{"work", "--kind", "k", "cat"}, "give the command after --"},
		{[]string{"work", "--kind", "k", "x", "--", "cat"}, "give the command after --"},
		{[]string{"work", "--kind", "", "--", "cat"}, "--kind must not be empty"},
		{[]string{"work", "--kind", "k", "--concurrency", "0", "--", "cat"}, "--concurrency must be 1..4096, got 0"},
		// Once wrapped the dispatcher's count: the worker ran nothing.
		{[]string{"work", "--kind", "k", "--concurrency", "4611686018427387904", "--", "cat"}, "--concurrency must be 1..4096"},
		{[]string{"work", "--kind", "k", "--max-attempts", "0", "--", "cat"}, "--max-attempts must be 1..1000"},
		{[]string{"work", "--kind", "k", "--max-attempts", "9223372036854775807", "--", "cat"}, "--max-attempts must be 1..1000"},
		{[]string{"work", "--kind", "k", "--grace", "0s", "--", "cat"}, "--grace must be positive"},
		{[]string{"work", "--kind", "k", "--grace", "2562047h", "--", "cat"}, "--grace must be positive and at most 1h"},
		{[]string{"work", "--kind", "k", "--backoff", "-1s", "--", "cat"}, "--backoff must be positive"},
		{[]string{"work", "--kind", "k", "--backoff", "25h", "--", "cat"}, "--backoff must be positive and at most 24h"},
		{[]string{"work", "--kind", "k", "--drain", "2562047h", "--", "cat"}, "--drain must be 0..24h"},
		{[]string{"work", "--kind", "k", "--result-limit", "999999999", "--", "cat"}, "--result-limit must be"},
		{[]string{"work", "--kind", "k", "--ttl", "100ms", "--", "cat"}, "--ttl: kvlease: invalid TTL: 100ms outside 1s..24h"},
	} {
		require.Contains(t, c.fail(tc.args...), tc.want, tc.args)
	}
	// Flags are judged before anything else: no server is needed to be
	// told.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", "nats://127.0.0.1:1", "work", "--kind", "k", "--concurrency", "4611686018427387904", "--", "cat"}, "--concurrency must be 1..4096"},
		{[]string{"--server", "nats://127.0.0.1:1", "work", "--kind", "k", "--ttl", "100ms", "--", "cat"}, "--ttl: kvlease: invalid TTL"},
	} {
		require.Contains(t, requireFailure(t, runCLI(t, tc.args...), tc.args), tc.want, tc.args)
	}
	// Bad input to admit's runtime flags writes nothing.
	for _, args := range [][]string{
		{"ledger", "admit", "--no-kind", "a", "--seq", "1", "--delay", "-1s"},
		{"ledger", "admit", "--no-kind", "a", "--seq", "1", "--delay", "1s", "--run-at", "2030-01-01T00:00:00Z"},
		{"ledger", "admit", "--no-kind", "a", "--seq", "1", "--run-at", "tomorrow"},
		{"ledger", "admit", "--no-kind", "a", "--seq", "1", "--max-attempts", "-2"},
		{"ledger", "admit", "a", "--seq", "1", "--kind", strings.Repeat("k", kvledger.MaxKindBytes+1)},
	} {
		c.fail(args...)
	}
	require.False(t, bucketExists(t, n, defaultLedgerBucket), "no bad command wrote anything")
}

// A mistyped or non-executable command is refused before anything is
// claimed, with the shell's 127 or 126, as `lock` does: it once failed
// every task of its kind within seconds and blocked their dependents.
func TestWorkChecksCommandFirst(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "x", "--seq", "1", "--kind", "mail")
	notExec := filepath.Join(t.TempDir(), "send.sh")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	for _, tc := range []struct {
		cmd  string
		code int
	}{{"pyhton3-natscoord-test", 127}, {"/nonexistent/natscoord-test-binary", 127}, {notExec, 126}} {
		r := c.run("work", "--kind", "mail", "--", tc.cmd, "send.py")
		require.Equal(t, tc.code, r.code, r.stderr)
		require.Contains(t, requireFailure(t, r, nil), tc.cmd)
	}
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "x")), &rec))
	require.Equal(t, kvledger.StatusPending, rec.Status)
	require.Zero(t, rec.Attempts)
}

// A command that passed the check but cannot be started when a task
// comes (its binary was removed): the worker stops at once, without
// waiting out --drain, exits 127 naming the command, and the task's
// attempt is recorded as failed with that error, as for any failed
// attempt (it once held the claim until the drain ran out).
func TestWorkCommandGoneAfterStart(t *testing.T) {
	c, _ := newCLI(t)
	bin := filepath.Join(t.TempDir(), "send")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\necho sent\n"), 0o755))
	// --max-attempts 1: a counted attempt would fail the task for good.
	work := c.start("work", "--kind", "mail", "--drain", "1h", "--max-attempts", "1", "--", bin)
	work.line(t, 20*time.Second, "Ctrl-C drains and stops")
	require.NoError(t, os.Remove(bin))
	c.ok("ledger", "admit", "x", "--seq", "1", "--kind", "mail")
	r := work.result(t) // bounded far below --drain
	require.Equal(t, 127, r.code, r.stderr)
	require.Contains(t, r.stderr, "natscoord work: stopping")
	require.Contains(t, r.stderr, "natscoord: work: cannot start the command: \""+bin+"\"")
	require.Contains(t, r.stderr, "its task was given back, the attempt not counted")
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "x")), &rec))
	require.Equal(t, kvledger.StatusPending, rec.Status, "given back, not failed")
	require.Equal(t, 0, rec.Attempts, "the attempt is not counted")
	require.Contains(t, rec.LastError, "cannot start the command: \""+bin+"\"")
}

// The command does not inherit natscoord's and NATS's secrets
// (NATS_URL with its password, credentials, the dashboard token) unless
// --pass-secrets; the rest of the environment and the task's variables
// it gets.
func TestWorkCommandEnvironment(t *testing.T) {
	c, _ := newCLI(t)
	t.Setenv("NATS_URL", "nats://user:s3cret-pass@127.0.0.1:1")
	t.Setenv("NATS_CREDS", "/secret/user.creds")
	t.Setenv("NATSCOORD_UI_TOKEN", "ui-t0ken")
	t.Setenv("WORK_TEST_KEPT", "kept")
	env := func(key string, pass bool) string {
		t.Helper()
		c.ok("ledger", "admit", key, "--seq", "1", "--kind", "env")
		args := []string{"work", "--kind", "env", "--", "env"}
		if pass {
			args = []string{"work", "--kind", "env", "--pass-secrets", "--", "env"}
		}
		work := c.start(args...)
		r := c.run("ledger", "wait", key)
		require.Equal(t, waitCompleted, r.code, r.stderr)
		require.Equal(t, 0, work.stop(t).code)
		var rec kvledger.TaskState
		require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", key)), &rec))
		var out string
		require.NoError(t, json.Unmarshal(rec.Result, &out))
		return out
	}
	out := env("default", false)
	require.Contains(t, out, "WORK_TEST_KEPT=kept")
	require.Contains(t, out, "NATSCOORD_TASK_KEY=default")
	require.NotContains(t, out, "s3cret-pass")
	require.NotContains(t, out, "NATS_CREDS")
	require.NotContains(t, out, "ui-t0ken")
	out = env("passed", true)
	require.Contains(t, out, "NATS_URL=nats://user:s3cret-pass@127.0.0.1:1")
	require.Contains(t, out, "NATS_CREDS=/secret/user.creds")
	require.Contains(t, out, "NATSCOORD_UI_TOKEN=ui-t0ken")
	require.Contains(t, out, "NATSCOORD_TASK_KEY=passed")
	help := c.ok("work", "--help")
	require.Contains(t, help, "--pass-secrets")
	// The stderr tail is stored: the help says so, so that nobody prints
	// secrets there.
	require.Contains(t, help, "its last 512 bytes are stored as the\ntask's last error")
	require.Contains(t, help, "Never print secrets on CMD's stderr")
}

// work's lines escape keys and errors as the tables do, a drained
// attempt shows how long it ran, and a retry's next time has
// milliseconds.
func TestWorkOutputLines(t *testing.T) {
	c, n := newCLI(t)
	// Admission refuses control characters in keys now; a record stored
	// before that rule (written here beneath the ledger) must still print
	// escaped.
	key := "esc\x1b[31mred"
	l := openTestLedger(t, n)
	ok, err := l.Store().CompareAndSwap(natstest.Context(t, 5*time.Second), kvledger.IdempotencyKey(key), kvledger.TaskState{},
		kvledger.TaskState{Key: kvledger.IdempotencyKey(key), Status: kvledger.StatusPending, Sequence: 1, Kind: "k", MaxAttempts: 2})
	require.NoError(t, err)
	require.True(t, ok)
	work := c.start("work", "--kind", "k", "--backoff", "250ms", "--", "sh", "-c", `printf 'bad\033[2J\n' >&2; exit 3`)
	r := c.run("ledger", "wait", key)
	require.Equal(t, waitFailed, r.code, r.stderr)
	out := work.stop(t).stdout
	require.NotContains(t, out, "\x1b")
	require.Regexp(t, `(?m)^retried\s+esc\\x1b\[31mred\s+attempt 1 .*status 3: bad\\x1b\[2J  next \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\S* \(in \d+(\.\d+)?m?s\)$`, out)
	require.Regexp(t, `(?m)^failed\s+esc\\x1b\[31mred\s+attempt 2 `, out)

	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	t.Setenv("STARTED", started)
	c.ok("ledger", "admit", "slow", "--seq", "1", "--kind", "slow")
	work = c.start("work", "--kind", "slow", "--drain", "0s", "--grace", "300ms", "--", "sh", "-c", `echo x > "$STARTED"; sleep 30`)
	natstest.Eventually(t, 20*time.Second, func() bool { _, err := os.Stat(started); return err == nil })
	seen := time.Now()
	// The command runs while the record says claimed.
	require.Contains(t, c.ok("ledger", "show", "slow"), "claimed")
	ran := time.Since(seen)
	stopped := work.stop(t).stdout
	// Given back once the command was stopped, which the line says.
	m := regexp.MustCompile(`(?m)^released\s+slow\s+attempt 1\s+fence \d+\s+(\S+)  worker: draining \(command stopped: exit status 143\)$`).FindStringSubmatch(stopped)
	require.NotNil(t, m, stopped)
	d, err := time.ParseDuration(m[1])
	require.NoError(t, err, m[0])
	require.GreaterOrEqual(t, d, ran.Round(time.Millisecond), "the released line says how long the command ran: %q", m[0])
	require.Positive(t, d)
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

// process is natscoord run as a process of its own (the test binary, see
// TestMain), for the tests that must kill it.
type process struct {
	cmd      *exec.Cmd
	out, err natstest.SyncBuffer
	done     chan struct{}
}

// startProcess starts natscoord with args against c's server; it is
// killed, and waited for, when the test ends.
func (c *cli) startProcess(args ...string) *process {
	c.t.Helper()
	p := &process{done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], append([]string{"--server", c.url}, args...)...)
	p.cmd.Env = append(os.Environ(), cliProcessEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	require.NoError(c.t, p.cmd.Start())
	go func() {
		defer close(p.done)
		_ = p.cmd.Wait()
	}()
	c.t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		natstest.WaitClosed(c.t, p.done, 30*time.Second, "natscoord to end")
	})
	return p
}

// A worker outlives a server restart and says so in its own lines: one
// when the connection is lost, one when it is back, and nats.go's
// asynchronous errors (a consumer that missed its heartbeats: "consumer
// not active") formatted as its own instead of raw, every time.
func TestWorkServerRestart(t *testing.T) {
	s := natstest.StartRestartable(t)
	c := &cli{t: t, url: s.ClientURL()}
	c.ok("ledger", "admit", "before", "--seq", "1", "--kind", "k")
	w := c.startProcess("work", "--kind", "k", "--", "sh", "-c", "echo ok")
	r := c.run("ledger", "wait", "before")
	require.Equal(t, waitCompleted, r.code, r.stderr)

	s.Restart()
	natstest.Eventually(t, 30*time.Second, func() bool { return strings.Contains(w.err.String(), "natscoord work: reconnected to ") },
		"the worker says it reconnected: %q", &w.err)
	// The worker's watches are replaced as soon as it is back (kvx's
	// hub), not when nats.go's heartbeat check finds their consumers
	// gone 10–20 s later: the task is picked up at once.
	admitted := time.Now()
	c.ok("ledger", "admit", "after", "--seq", "1", "--kind", "k")
	r = c.run("ledger", "wait", "after")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	require.Less(t, time.Since(admitted), 6*time.Second, "a task admitted after the restart is run promptly")

	require.NoError(t, w.cmd.Process.Signal(syscall.SIGINT))
	natstest.WaitClosed(t, w.done, 30*time.Second, "the worker to drain and stop")
	require.Equal(t, 0, w.cmd.ProcessState.ExitCode(), w.err.String())
	errs := w.err.String()
	require.Contains(t, errs, "natscoord work: connection to the server lost")
	for _, l := range strings.Split(strings.TrimSuffix(errs, "\n"), "\n") {
		require.True(t, strings.HasPrefix(l, "natscoord work: "), "a line of the worker's own: %q", l)
	}
	require.Regexp(t, `(?m)^completed\s+after\s+attempt 1`, w.out.String())
}
