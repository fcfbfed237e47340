package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvlock"
)

// cli runs commands against one server.
type cli struct {
	t   *testing.T
	url string
}

func newCLI(t *testing.T) (*cli, *natstest.Node) {
	t.Helper()
	n := natstest.WithServer(t)
	return &cli{t: t, url: n.Server.ClientURL()}, n
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	return runCLI(c.t, append([]string{"--server", c.url}, args...)...)
}

// ok runs a command that must succeed.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	require.Equal(c.t, 0, r.code, "%v: %s", args, r.stderr)
	require.Empty(c.t, r.stderr)
	return r.stdout
}

// fail runs a command that must fail with one line on stderr, nothing on
// stdout, and returns that line.
func (c *cli) fail(args ...string) string {
	c.t.Helper()
	return requireFailure(c.t, c.run(args...), args)
}

func requireFailure(t *testing.T, r result, args []string) string {
	t.Helper()
	require.NotEqual(t, 0, r.code, "%v succeeded: %s", args, r.stdout)
	require.Empty(t, r.stdout, args)
	require.True(t, strings.HasPrefix(r.stderr, "natscoord: "), r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
	return r.stderr
}

// background is one command line running until it returns; the test
// reads its output while it runs and cancels its context to stand for
// SIGINT. It is the one way the tests run a command in the background.
type background struct {
	out, err natstest.SyncBuffer
	cancel   context.CancelFunc
	done     chan struct{} // closed when the command returned code
	code     int
}

// startRun starts the command line args, without a --server of its own.
// The command is cancelled, and waited for, when the test ends.
func startRun(t *testing.T, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	b := &background{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.code = run(ctx, args, &b.out, &b.err)
	}()
	t.Cleanup(func() {
		cancel()
		natstest.WaitClosed(t, b.done, 30*time.Second, fmt.Sprintf("the command %q to end after its cancellation", args))
	})
	return b
}

// start starts a command line against c's server.
func (c *cli) start(args ...string) *background {
	c.t.Helper()
	return startRun(c.t, append([]string{"--server", c.url}, args...)...)
}

// wait waits for the command to end and returns its exit code.
func (b *background) wait(t *testing.T) int {
	t.Helper()
	natstest.WaitClosed(t, b.done, 60*time.Second, "the command to end")
	return b.code
}

// result waits for the command to end and returns what it did.
func (b *background) result(t *testing.T) result {
	t.Helper()
	code := b.wait(t)
	return result{code: code, stdout: b.out.String(), stderr: b.err.String()}
}

// stop cancels the command (its SIGINT) and returns what it did.
func (b *background) stop(t *testing.T) result {
	t.Helper()
	b.cancel()
	return b.result(t)
}

// line waits up to timeout for a whole line of output that contains want
// and returns it.
func (b *background) line(t *testing.T, timeout time.Duration, want string) string {
	t.Helper()
	var line string
	natstest.Eventually(t, timeout, func() bool {
		out := b.out.String()
		for _, l := range strings.Split(out[:strings.LastIndex(out, "\n")+1], "\n") {
			if strings.Contains(l, want) {
				line = l
				return true
			}
		}
		return false
	}, "no output line with %q", want)
	return line
}

// ended reports whether the command has returned.
func (b *background) ended() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

func bucketExists(t *testing.T, n *natstest.Node, bucket string) bool {
	t.Helper()
	_, err := n.JS.KeyValue(natstest.Context(t, 5*time.Second), bucket)
	return err == nil
}

func TestLedgerCommands(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "build", "--seq", "1", "--task", `{"cmd":"make"}`)
	out := c.ok("ledger", "admit", "--no-kind", "test", "--seq", "1", "--needs", "build")
	require.Contains(t, out, "test admitted: pending")

	// A duplicate is not admitted and not an error.
	var adm struct {
		Admitted bool               `json:"admitted"`
		Task     kvledger.TaskState `json:"task"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "admit", "--no-kind", "test", "--seq", "1")), &adm))
	require.False(t, adm.Admitted)
	require.Equal(t, kvledger.StatusPending, adm.Task.Status)

	out = c.ok("ledger", "ls")
	require.Regexp(t, `(?m)^KEY\s+KIND\s+PHASE\s+ATTEMPTS\s+OWNER\s+NEEDS\s+BLOCKED-BY\s+ERROR$`, out)
	require.Regexp(t, `(?m)^test\s+-\s+pending\s+0/3\s+-\s+build\s+-\s+-$`, out)
	out = c.ok("ledger", "ls", "--wide")
	require.Regexp(t, `(?m)^KEY\s+KIND\s+PHASE\s+ATTEMPTS\s+SEQ\s+OWNER\s+FENCE\s+NEEDS\s+BLOCKED-BY\s+REV\s+ERROR$`, out)
	require.Regexp(t, `(?m)^test\s+-\s+pending\s+0/3\s+1\s+-\s+\d+\s+build\s+-\s+\d+\s+-$`, out)
	var tasks []kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "ls")), &tasks))
	require.Len(t, tasks, 2)
	require.Equal(t, kvledger.IdempotencyKey("build"), tasks[0].Key)
	require.Equal(t, map[string]any{"cmd": "make"}, tasks[0].Task)

	var shown kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "test")), &shown))
	require.Equal(t, []kvledger.IdempotencyKey{"build"}, shown.Needs)
	require.Contains(t, c.ok("ledger", "show", "build"), `{"cmd":"make"}`)

	// A worker claims build; the CLI completes it with the claim's fence.
	fence := claim(t, openTestLedger(t, n), "build", "w1")
	stale := fmt.Sprint(uint64(fence) - 1)
	require.Contains(t, c.fail("ledger", "complete", "build", "--owner", "w1", "--fence", stale, "--status", "completed"), "fence token is stale")
	var done kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "complete", "build", "--owner", "w1",
		"--fence", fmt.Sprint(uint64(fence)), "--status", "failed")), &done))
	require.Equal(t, kvledger.StatusFailed, done.Status)
	// Its dependent is blocked, and a repeated completion is refused.
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "test")), &shown))
	require.Equal(t, kvledger.StatusBlocked, shown.Status)
	require.Equal(t, kvledger.IdempotencyKey("build"), shown.BlockedBy)
	require.Contains(t, c.fail("ledger", "complete", "build", "--owner", "w1", "--fence", fmt.Sprint(uint64(fence)), "--status", "completed"), "not claimed")

	// Snapshot to a file, restore into another bucket.
	file := filepath.Join(t.TempDir(), "snap.json")
	require.Contains(t, c.ok("ledger", "snapshot", "-o", file), "wrote 2 tasks to "+file)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	snap, err := kvledger.Decode(data)
	require.NoError(t, err)
	require.Len(t, snap.Tasks, 2)
	stdoutSnap, err := kvledger.Decode([]byte(c.ok("ledger", "snapshot")))
	require.NoError(t, err)
	require.Len(t, stdoutSnap.Tasks, 2)

	var restored map[string]any
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "--bucket", "copy", "restore", file)), &restored))
	require.EqualValues(t, 2, restored["restored"])
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "--bucket", "copy", "ls")), &tasks))
	require.Len(t, tasks, 2)
	require.Equal(t, kvledger.StatusBlocked, tasks[1].Status)
}

// Restoring a file one of whose keys exists writes nothing at all.
func TestLedgerRestoreConflictWritesNothing(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "a", "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", "b", "--seq", "1")
	file := filepath.Join(t.TempDir(), "snap.json")
	c.ok("ledger", "snapshot", "-o", file)
	c.ok("ledger", "--bucket", "half", "admit", "--no-kind", "b", "--seq", "7", "--create")
	require.Contains(t, c.fail("ledger", "--bucket", "half", "restore", file), `task "b" already exists; nothing restored`)
	var tasks []kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "--bucket", "half", "ls")), &tasks))
	require.Len(t, tasks, 1)
	require.Equal(t, kvledger.Sequence(7), tasks[0].Sequence)
}

func TestLeaseCommands(t *testing.T) {
	c, n := newCLI(t)
	ctx := natstest.Context(t, 10*time.Second)
	require.Equal(t, "[]\n", c.ok("--json", "lease", "ls")) // no bucket yet: an empty list, and nothing created
	require.False(t, bucketExists(t, n, kvlease.DefaultBucket))
	m, err := kvlease.NewManager(ctx, n.NewJS(t), kvlease.Config{Holder: "holder-1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	g, ok, err := m.TryAcquireKey(ctx, "jobs.a", 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)

	out := c.ok("lease", "ls")
	require.Regexp(t, `(?m)^KEY\s+HOLDER\s+HOST\s+PID\s+TTL\s+ACQUIRED\s+REVISION$`, out)
	require.Regexp(t, `(?m)^jobs\.a\s+holder-1\s+\S+\s+\d+\s+30s\s+\S+\s+\d+$`, out)
	var rows []leaseRow
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lease", "ls")), &rows))
	require.Len(t, rows, 1)
	require.Equal(t, "holder-1", rows[0].Holder)
	require.Equal(t, g.Revision(), rows[0].Revision)

	var row leaseRow
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lease", "show", "jobs.a")), &row))
	require.Equal(t, "30s", row.TTL)
	require.Equal(t, os.Getpid(), row.PID)
	require.Contains(t, c.ok("lease", "show", "jobs.a"), "holder-1")
	require.Contains(t, c.fail("lease", "show", "jobs.nope"), "no lease held")

	require.Contains(t, c.fail("lease", "release", "jobs.a"), "--force")
	require.Equal(t, g.Fence(), g.Revision())
	require.Contains(t, c.ok("lease", "release", "jobs.a", "--force"), "released jobs.a (held by holder-1")
	require.Contains(t, c.fail("lease", "release", "jobs.a", "--force"), "no lease held")
	require.ErrorIs(t, g.Renew(ctx), kvlease.ErrLost)
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lease", "ls")), &rows))
	require.Empty(t, rows)
}

func TestEventsTailDurable(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "x", "--seq", "1")
	c.ok("ledger", "admit", "--no-kind", "y", "--seq", "1", "--needs", "x")
	out := c.ok("--json", "events", "tail", "--durable", "cli-test", "--count", "2")
	var got []events.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		e, err := events.Unmarshal(sc.Bytes())
		require.NoError(t, err)
		got = append(got, e)
	}
	require.Len(t, got, 2)
	require.Equal(t, "x", got[0].Key)
	require.Equal(t, "y", got[1].Key)
	require.Equal(t, kvledger.AdmittedEvent, got[0].Name)

	// The durable consumer resumes after what it acknowledged.
	c.ok("ledger", "admit", "--no-kind", "z", "--seq", "1")
	out = c.ok("events", "tail", "--durable", "cli-test", "--count", "1")
	require.Regexp(t, `(?m)^TIME\s+EVENT\s+SOURCE\s+KEY\s+STATUS\s+OWNER\s+FENCE\s+REV\s+BLOCKED-BY$`, out)
	require.Regexp(t, `(?m)ledger\.admitted\s+natscoord_ledger\s+z\s+pending\s+-\s+\d+\s+\d+\s+-$`, out)
}

func TestEventsTailLive(t *testing.T) {
	c, _ := newCLI(t)
	tail := c.start("--json", "events", "tail", "--count", "1")
	// The live tail sees only what is published after it subscribed, so
	// keep admitting new keys until it has printed one.
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; !tail.ended(); i++ {
		require.True(t, time.Now().Before(deadline), "live tail printed nothing")
		c.ok("ledger", "admit", "--no-kind", fmt.Sprintf("k%d", i), "--seq", "1")
	}
	r := tail.result(t)
	require.Equal(t, 0, r.code, r.stderr)
	e, err := events.Unmarshal([]byte(strings.TrimSpace(r.stdout)))
	require.NoError(t, err)
	require.Equal(t, kvledger.AdmittedEvent, e.Name)
}

// A SIGINT (the context's cancellation) ends a tail with exit code 0.
func TestEventsTailInterrupted(t *testing.T) {
	c, _ := newCLI(t)
	r := c.start("events", "tail").stop(t)
	require.Equal(t, 0, r.code, r.stderr)
}

func TestBadInput(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "a", "--seq", "1")

	t.Run("unknown key", func(t *testing.T) {
		require.Contains(t, c.fail("ledger", "show", "missing"), `no task "missing"`)
		require.Contains(t, c.fail("ledger", "complete", "missing", "--owner", "o", "--fence", "1", "--status", "completed"), `no task "missing"`)
		require.Contains(t, c.fail("lease", "--bucket", "natscoord_ledger", "show", "missing"), "no lease held")
	})
	t.Run("unknown bucket is not created", func(t *testing.T) {
		c.fail("ledger", "--bucket", "nobucket", "ls")
		c.fail("ledger", "--bucket", "nobucket", "snapshot")
		c.fail("lease", "--bucket", "nobucket", "release", "x.y", "--force")
		require.False(t, bucketExists(t, n, "nobucket"))
	})
	t.Run("malformed snapshot", func(t *testing.T) {
		dir := t.TempDir()
		for name, body := range map[string]string{
			"truncated.json": `{"tasks":[{"key":"a"`,
			"status.json":    `{"tasks":[{"key":"q","status":"bogus","sequence":1,"fence":1,"rev":1}]}`,
			"dup.json":       `{"tasks":[{"key":"q","status":"pending","sequence":1,"fence":1,"rev":1},{"key":"q","status":"pending","sequence":1,"fence":1,"rev":1}]}`,
			"half.json":      `{"tasks":[{"key":"ok","status":"pending","sequence":1,"fence":1,"rev":1},{"key":"bad","status":"blocked","sequence":1,"fence":1,"rev":1}]}`,
			"trailing.json":  `{"tasks":[]} x`,
		} {
			f := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(f, []byte(body), 0o600))
			c.fail("ledger", "--bucket", "restored", "restore", f)
		}
		c.fail("ledger", "--bucket", "restored", "restore", filepath.Join(dir, "absent.json"))
		require.False(t, bucketExists(t, n, "restored"), "a refused file writes nothing, not even the bucket")
	})
	t.Run("bad flags", func(t *testing.T) {
		for _, args := range [][]string{
			{"ledger", "admit", "--no-kind", "b", "--seq", "1", "--needs", "a,,c"},
			{"ledger", "admit", "--no-kind", "b", "--seq", "1", "--needs", "b"},
			{"ledger", "admit", "--no-kind", "b", "--seq", "1", "--task", "{"},
			{"ledger", "admit", "--no-kind", "b", "--seq", "-1"},
			{"ledger", "admit", "--no-kind", "b", "--seq", "x"},
			{"ledger", "complete", "a", "--owner", "o", "--fence", "1", "--status", "done?"},
			{"ledger", "complete", "a", "--owner", "o", "--status", "failed"},
			{"ledger", "show"},
			{"lease", "show", "a", "b"},
			{"events", "tail", "--count", "-1"},
			{"nosuch"},
			{"--timeout", "0s", "ledger", "ls"},
			{"--password", "p", "ledger", "ls"},
			{"--tlscert", "x.pem", "ledger", "ls"},
			{"--creds", "/nonexistent/creds", "ledger", "ls"},
		} {
			c.fail(args...)
		}
		var tasks []kvledger.TaskState
		require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "ls")), &tasks))
		require.Len(t, tasks, 1, "no bad command wrote anything")
	})
}

func TestUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "nats://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	for _, args := range [][]string{
		{"ledger", "ls"}, {"lease", "ls"}, {"events", "tail", "--count", "1"}, {"demo"},
	} {
		r := runCLI(t, append([]string{"--server", url, "--timeout", "2s"}, args...)...)
		require.Contains(t, requireFailure(t, r, args), ln.Addr().String())
	}
}

func TestWrongCredentials(t *testing.T) {
	n := natstest.WithServer(t, func(o *embedded.Options) { o.Auth = embedded.Auth{User: "app", Password: "secret"} })
	url := n.Server.ClientURL()
	for _, creds := range [][]string{{}, {"--user", "app", "--password", "wrong"}, {"--user", "sometoken"}} {
		args := append([]string{"--server", url, "--timeout", "2s"}, creds...)
		r := runCLI(t, append(args, "ledger", "ls")...)
		require.Contains(t, strings.ToLower(requireFailure(t, r, args)), "authorization violation")
	}
	r := runCLI(t, "--server", url, "--user", "app", "--password", "secret", "ledger", "admit", "--no-kind", "a", "--seq", "1")
	require.Equal(t, 0, r.code, r.stderr)
}

func TestLockLs(t *testing.T) {
	c, n := newCLI(t)
	ctx := natstest.Context(t, 10*time.Second)
	l, err := kvlock.New(ctx, n.NewJS(t), kvlock.Config{Holder: "svc-1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	lk, err := l.Acquire(ctx, kvlock.Key("conv", "42"))
	require.NoError(t, err)
	e, err := kvlock.NewElection(l, "scheduler main")
	require.NoError(t, err)
	require.NoError(t, e.Campaign(ctx, "10.0.0.7:8080"))

	out := c.ok("lock", "ls")
	require.Regexp(t, `(?m)^NAME\s+KIND\s+KEY\s+HOLDER\s+TTL\s+ACQUIRED\s+REVISION$`, out)
	require.Regexp(t, `(?m)^lock\s+lock\s+conv\.42\s+svc-1\s+10s\s+\S+\s+\d+$`, out)
	require.Regexp(t, `(?m)^lock\s+election\s+scheduler main\s+svc-1\s+10s\s+\S+\s+\d+$`, out)
	var rows []lockRow
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lock", "ls")), &rows))
	require.Len(t, rows, 2)
	require.Equal(t, lk.Token(), rows[0].Revision)
	require.Equal(t, "lock.l.conv.42", rows[0].Lease)
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lock", "ls", "--name", "other")), &rows))
	require.Empty(t, rows)

	// A stuck lock is force-released through its lease key.
	c.ok("lease", "release", "lock.l.conv.42", "--force")
	require.ErrorIs(t, lk.Renew(ctx), kvlock.ErrLost, "the holder learns at its next renewal")
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lock", "ls")), &rows))
	require.Len(t, rows, 1)
	require.Equal(t, "election", rows[0].Kind)
}

// serve prints its URL, serves the CLI's other commands, and on SIGINT
// (its context's end) shuts down keeping its data.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	serve := func() (*background, string) {
		b := startRun(t, "--json", "serve", "--port", "0", "--data-dir", dir)
		var info struct {
			URL     string `json:"url"`
			DataDir string `json:"data_dir"`
		}
		natstest.Eventually(t, 10*time.Second, func() bool { return json.Unmarshal([]byte(b.out.String()), &info) == nil })
		require.Equal(t, dir, info.DataDir)
		return b, info.URL
	}
	b, url := serve()
	r := runCLI(t, "--server", url, "ledger", "admit", "--no-kind", "kept", "--seq", "1")
	require.Equal(t, 0, r.code, r.stderr)
	r = b.stop(t)
	require.Equal(t, 0, r.code, r.stderr)

	// The data survives a restart on the same directory.
	b, url = serve()
	r = runCLI(t, "--server", url, "ledger", "show", "kept")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 0, b.stop(t).code)
}
