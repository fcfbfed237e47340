package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// waitFile waits until path holds want.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	natstest.Eventually(t, 20*time.Second, func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), want)
	}, "%s never held %q", path, want)
}

func TestLockRunsCommand(t *testing.T) {
	c, _ := newCLI(t)
	// The command gets the fencing token, the key and the lease key, and
	// natscoord exits with its exit code, printing nothing of its own.
	r := c.run("lock", "jobs.nightly", "--", "sh", "-c", `echo "$NATSCOORD_LOCK_KEY $NATSCOORD_LOCK_TOKEN $NATSCOORD_LOCK_LEASE_KEY"; exit 3`)
	require.Equal(t, 3, r.code, r.stderr)
	require.Empty(t, r.stderr)
	f := strings.Fields(r.stdout)
	require.Len(t, f, 3)
	require.Equal(t, "jobs.nightly", f[0])
	first, err := strconv.ParseUint(f[1], 10, 64)
	require.NoError(t, err)
	require.Equal(t, "lock.l.jobs.nightly", f[2])

	// The lock was released after the command: the next one gets it at
	// once, with a larger token.
	out := c.ok("lock", "jobs.nightly", "--wait", "5s", "--", "sh", "-c", `echo $NATSCOORD_LOCK_TOKEN`)
	second, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err)
	require.Greater(t, second, first)

	// A command killed by a signal gives 128+N, like a shell.
	r = c.run("lock", "k", "--", "sh", "-c", "kill -9 $$")
	require.Equal(t, 128+9, r.code, r.stderr)
	r = c.run("lock", "k", "--", "/nonexistent/cmd")
	require.Equal(t, 127, r.code)
	require.Contains(t, r.stderr, "/nonexistent/cmd")
}

// Signals sent to natscoord reach the command, and the lock is kept until
// the command has exited.
func TestLockForwardsSignals(t *testing.T) {
	c, _ := newCLI(t)
	dir := t.TempDir()
	ready, got := filepath.Join(dir, "ready"), filepath.Join(dir, "got")
	b := c.start("lock", "sig", "--", "sh", "-c",
		`trap 'echo usr1 >> `+got+`; exit 4' USR1; echo ok > `+ready+`; while :; do sleep 0.02; done`)
	waitFile(t, ready, "ok")
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR1))
	require.Equal(t, 4, b.wait(t), b.err.String())
	waitFile(t, got, "usr1")
	var rows []lockRow
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lock", "ls")), &rows))
	require.Empty(t, rows, "released once the command exited")
}

// Losing the lock sends the command SIGTERM at once; natscoord exits
// non-zero even when the command exits 0 on it.
func TestLockLostTerminatesCommand(t *testing.T) {
	c, _ := newCLI(t)
	dir := t.TempDir()
	ready, got := filepath.Join(dir, "ready"), filepath.Join(dir, "got")
	b := c.start("lock", "--ttl", "1s", "lost", "--", "sh", "-c",
		`trap 'echo term >> `+got+`; exit 0' TERM; echo ok > `+ready+`; while :; do sleep 0.02; done`)
	waitFile(t, ready, "ok")
	c.ok("lease", "release", "lock.l.lost", "--force")
	require.Equal(t, 1, b.wait(t))
	require.Contains(t, b.err.String(), `lock "lost" lost while the command ran`)
	// The line is natscoord's last one (the shell may report its sleep
	// terminated before it, since the whole process group got SIGTERM).
	require.True(t, strings.HasSuffix(b.err.String(), "the command was sent SIGTERM\n"), b.err.String())
	waitFile(t, got, "term")
}

// Without a command, lock holds until interrupted (exit 0) and releases.
func TestLockHoldsUntilInterrupted(t *testing.T) {
	c, _ := newCLI(t)
	b := c.start("lock", "held.one")
	natstest.Eventually(t, 20*time.Second, func() bool { return strings.Contains(b.out.String(), "holding lock held.one (token ") })
	var rows []lockRow
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lock", "ls")), &rows))
	require.Len(t, rows, 1)
	require.Equal(t, "held.one", rows[0].Key)

	// Someone else waits with a bound and gives up.
	r := c.run("lock", "held.one", "--wait", "300ms", "--", "true")
	require.Contains(t, requireFailure(t, r, nil), "not acquired within --wait 300ms")

	b.cancel()
	require.Equal(t, 0, b.wait(t), b.err.String())
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lock", "ls")), &rows))
	require.Empty(t, rows)
}

func TestLockBadInput(t *testing.T) {
	c, n := newCLI(t)
	for _, args := range [][]string{
		{"lock", "k", "extra"},              // a command without --
		{"lock", "k", "--"},                 // -- and nothing after
		{"lock", "bad key", "--", "true"},   // not a lock key
		{"lock", "a..b", "--", "true"},      // empty token
		{"lock", "--ttl", "500ms", "k"},     // below the minimum TTL
		{"lock", "--bogus", "k", "--", "x"}, // unknown flag
		{"lock", "ls", "extra"},
	} {
		c.fail(args...)
	}
	require.False(t, bucketExists(t, n, "natscoord_leases"), "a refused lock writes nothing")
}

// A bucket named with --bucket must exist for lock and elect unless
// --create is given: a misspelt name is refused and nothing is created.
func TestLockAndElectRefuseAMissingBucket(t *testing.T) {
	c, n := newCLI(t)
	for _, args := range [][]string{
		{"lock", "k", "--bucket", "nope", "--", "true"},
		{"elect", "e", "v", "--bucket", "nope", "--", "true"},
	} {
		line := c.fail(args...)
		require.Contains(t, line, `bucket "nope" does not exist (add --create to create it)`, args)
	}
	require.False(t, bucketExists(t, n, "nope"))
	require.Empty(t, c.ok("lock", "k", "--bucket", "made", "--create", "--", "true"))
	require.True(t, bucketExists(t, n, "made"))
}

// The command of lock and elect does not inherit natscoord's secrets
// (NATS_PASSWORD, a NATS_URL with its password, NATSCOORD_UI_TOKEN)
// unless --pass-secrets, as work's commands; the rest of the environment
// and the lock's or election's variables it gets.
func TestLockAndElectCommandEnvironment(t *testing.T) {
	c, _ := newCLI(t)
	// natscoord connects with them (a server without auth takes any).
	t.Setenv("NATS_USER", "tester")
	t.Setenv("NATS_PASSWORD", "pw-s3cret")
	t.Setenv("NATS_URL", "nats://user:url-s3cret@127.0.0.1:1")
	t.Setenv("NATSCOORD_UI_TOKEN", "ui-t0ken")
	t.Setenv("LOCK_TEST_KEPT", "kept")
	secrets := []string{"NATS_PASSWORD=pw-s3cret", "NATS_URL=nats://user:url-s3cret@127.0.0.1:1", "NATSCOORD_UI_TOKEN=ui-t0ken"}
	for _, run := range [][]string{
		{"lock", "envlock"},
		{"elect", "envelection", "me"},
	} {
		out := c.ok(append(run, "--", "env")...)
		require.Contains(t, out, "LOCK_TEST_KEPT=kept", run)
		require.Regexp(t, `NATSCOORD_(LOCK_TOKEN|ELECTION_TERM)=\d+`, out, run)
		for _, s := range []string{"pw-s3cret", "url-s3cret", "ui-t0ken"} {
			require.NotContains(t, out, s, run)
		}
		out = c.ok(append(run, "--pass-secrets", "--", "env")...)
		for _, s := range secrets {
			require.Contains(t, out, s, run)
		}
		require.Regexp(t, `NATSCOORD_(LOCK_TOKEN|ELECTION_TERM)=\d+`, out, run)
		require.Contains(t, c.ok(run[0], "--help"), "--pass-secrets")
	}
}
