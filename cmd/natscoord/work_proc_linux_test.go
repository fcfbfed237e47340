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
	"github.com/natscoord/natscoord/kvledger"
)

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// readPids waits for the pids a script wrote to path (atomically, with
// mv) and has them killed when the test ends, should the test fail.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	natstest.Eventually(t, 20*time.Second, func() bool { _, err := os.Stat(path); return err == nil }, "the command wrote its pids")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, pid)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	return pids
}

func requireGone(t *testing.T, pids []int, what string) {
	t.Helper()
	requireGoneWithin(t, pids, 20*time.Second, what)
}

// A worker killed by SIGKILL leaves nothing running: the command and its
// grandchild (a shell's `sleep 300 &`) are stopped within a third of the
// claim's TTL, and the worker that takes the task over runs the only
// copy. Before, the command was
// re-parented to pid 1 and ran on beside the second worker's copy.
func TestWorkKilledWorkerLeavesNoCommand(t *testing.T) {
	c, _ := newCLI(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	c.ok("ledger", "admit", "long", "--seq", "1", "--kind", "long")
	// Both ignore SIGTERM: they are killed once the orphan grace, a third
	// of the claim's TTL, has passed, not --grace (an hour) later, long
	// after another worker took the task over.
	script := `trap '' TERM; sleep 300 & echo "$$ $!" > "` + pidFile + `.tmp"; mv "` + pidFile + `.tmp" "` + pidFile + `"; wait`
	w := c.startProcess("work", "--kind", "long", "--ttl", "3s", "--grace", "1h", "--", "sh", "-c", script)
	pids := readPids(t, pidFile)
	require.Len(t, pids, 2)
	for _, pid := range pids {
		require.True(t, alive(pid))
	}
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
	natstest.WaitClosed(t, w.done, 10*time.Second, "the killed worker")
	requireGone(t, pids, "after the worker was killed")

	// Another worker takes the task over once the claim's TTL ran out.
	w2 := c.start("work", "--kind", "long", "--", "sh", "-c", `echo "$NATSCOORD_TASK_ATTEMPT"`)
	r := c.run("ledger", "wait", "long")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "long")), &rec))
	require.JSONEq(t, "2", string(rec.Result))
	require.Equal(t, 0, w2.stop(t).code)
}

// What a command leaves running in the background when it exits is
// stopped: its process group (`sleep 77 &`) and what escaped the group
// with setsid.
func TestWorkStopsLeftoversAfterExit(t *testing.T) {
	c, _ := newCLI(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	c.ok("ledger", "admit", "quick", "--seq", "1", "--kind", "quick")
	script := `sleep 77 & a=$!; setsid sleep 78 >/dev/null 2>&1 & b=$!; echo "$a $b" > "` + pidFile + `.tmp"; mv "` + pidFile + `.tmp" "` + pidFile + `"; echo done`
	work := c.start("work", "--kind", "quick", "--grace", "500ms", "--", "sh", "-c", script)
	r := c.run("ledger", "wait", "quick")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	pids := readPids(t, pidFile)
	require.Len(t, pids, 2)
	requireGone(t, pids, "after the command exited")
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "quick")), &rec))
	require.JSONEq(t, `"done"`, string(rec.Result))
	require.Equal(t, 0, work.stop(t).code)
}

// A drain stops the command's grandchildren too, even one that ignores
// SIGTERM (SIGKILL after --grace).
func TestWorkDrainStopsGrandchildren(t *testing.T) {
	c, _ := newCLI(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	c.ok("ledger", "admit", "slow", "--seq", "1", "--kind", "slow")
	script := `sh -c 'trap "" TERM; sleep 300' & a=$!; setsid sleep 301 & echo "$$ $a $!" > "` + pidFile + `.tmp"; mv "` + pidFile + `.tmp" "` + pidFile + `"; wait`
	work := c.start("work", "--kind", "slow", "--drain", "0s", "--grace", "300ms", "--", "sh", "-c", script)
	pids := readPids(t, pidFile)
	r := work.stop(t)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "1 given back")
	requireGone(t, pids, "after the drain")
}

// onceScript is the command of the tests below: the task's first run
// holds a lock (flock) for as long as it or anything it started runs,
// ignores SIGTERM and runs "forever" (sleep 300 in the background,
// holding the lock too), having written its pids to $PIDS; a later run
// records an overlap in $OVERLAP when it finds the lock still held, and
// exits 0.
const onceScript = `exec 9>>"$LOCK"
if ! flock -n 9; then echo "overlap at fence $NATSCOORD_TASK_FENCE" >> "$OVERLAP"; fi
if [ -e "$PIDS" ]; then echo second; exit 0; fi
trap '' TERM
sleep 300 &
echo "$$ $!" > "$PIDS.tmp"; mv "$PIDS.tmp" "$PIDS"
wait`

// onceEnv sets the variables of onceScript and returns its pid file and
// overlap file.
func onceEnv(t *testing.T) (pids, overlap string) {
	dir := t.TempDir()
	pids, overlap = filepath.Join(dir, "pids"), filepath.Join(dir, "overlap")
	t.Setenv("LOCK", filepath.Join(dir, "lock"))
	t.Setenv("PIDS", pids)
	t.Setenv("OVERLAP", overlap)
	return pids, overlap
}

func requireNoOverlap(t *testing.T, overlap string) {
	t.Helper()
	b, err := os.ReadFile(overlap)
	if err == nil {
		t.Fatalf("the task ran twice at once: %s", b)
	}
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A drained worker gives its task back only once its command and
// everything it started have exited: a second worker never runs the task
// beside a command that ignores SIGTERM, with --drain 1s or 0. Before,
// the drain gave the task back when it sent SIGTERM, and the second
// worker ran it beside the first for --grace.
func TestWorkDrainNeverRunsATaskTwiceAtOnce(t *testing.T) {
	for _, drain := range []string{"1s", "0s"} {
		t.Run("drain "+drain, func(t *testing.T) {
			c, _ := newCLI(t)
			pidFile, overlap := onceEnv(t)
			c.ok("ledger", "admit", "k1", "--seq", "1", "--kind", "slow")
			a := c.startProcess("work", "--kind", "slow", "--drain", drain, "--grace", "2s", "--", "sh", "-c", onceScript)
			pids := readPids(t, pidFile)
			b := c.start("work", "--kind", "slow", "--", "sh", "-c", onceScript)

			require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
			natstest.WaitClosed(t, a.done, 30*time.Second, "the drained worker to stop")
			require.Equal(t, 0, a.cmd.ProcessState.ExitCode(), a.err.String())
			requireGone(t, pids, "after the drain")
			require.Regexp(t, `(?m)^released\s+k1\s+attempt 1\s+fence \d+`, a.out.String())

			r := c.run("ledger", "wait", "k1")
			require.Equal(t, waitCompleted, r.code, r.stderr)
			requireNoOverlap(t, overlap)
			var rec kvledger.TaskState
			require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "k1")), &rec))
			require.JSONEq(t, `"second"`, string(rec.Result))
			require.Equal(t, 1, rec.Attempts, "the drained attempt is not counted")
			require.Equal(t, 0, b.stop(t).code)
		})
	}
}

// A worker that cannot renew its claim (its server is down) kills the
// command and everything it started at once, with no --grace, before the
// server can expire the claim: when the server is back and another
// worker takes the task over, nothing of the first run is left. Before,
// the command got SIGTERM and an hour's --grace.
func TestWorkLostClaimKillsTheCommandAtOnce(t *testing.T) {
	const ttl = 2 * time.Second
	s := natstest.StartRestartable(t)
	c := &cli{t: t, url: s.ClientURL()}
	pidFile, overlap := onceEnv(t)
	c.ok("ledger", "admit", "k1", "--seq", "1", "--kind", "slow")
	a := c.startProcess("work", "--kind", "slow", "--ttl", ttl.String(), "--grace", "1h", "--", "sh", "-c", onceScript)
	pids := readPids(t, pidFile)

	s.Stop()
	down := time.Now()
	// The claim's lease was last renewed before the stop, so the server
	// could expire it from down+ttl on; the worker kills the tree at
	// the end of its validity window, a tenth of the TTL earlier. The
	// wait allows for a loaded machine; the time taken is logged.
	requireGoneWithin(t, pids, 2*ttl, "after the claim was lost")
	t.Logf("the command was killed %v after the server went down (claim TTL %v)", time.Since(down).Round(time.Millisecond), ttl)
	s.Start()

	b := c.start("work", "--kind", "slow", "--ttl", ttl.String(), "--", "sh", "-c", onceScript)
	r := c.run("ledger", "wait", "k1", "--for", "25s")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	requireNoOverlap(t, overlap)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	natstest.WaitClosed(t, a.done, 30*time.Second, "the first worker to stop")
	require.Regexp(t, `(?m)^lost\s+k1\s+attempt 1`, a.out.String())
	require.Equal(t, 0, b.stop(t).code)
}

func requireGoneWithin(t *testing.T, pids []int, d time.Duration, what string) {
	t.Helper()
	for _, pid := range pids {
		natstest.Eventually(t, d, func() bool { return !alive(pid) }, "%s: pid %d still runs", what, pid)
	}
}

// A running task that is cancelled keeps its claim until its command and
// everything it started have exited: `ledger cancel` reports it
// cancelling, `ledger reopen` is refused meanwhile, and a second worker
// never runs it beside the command, which ignores SIGTERM and is killed
// --grace later. It then ends cancelled, its dependent blocked, and runs
// again (once) only when reopened after that. Before, the cancel ended
// the claim at once: the reopen went through and the second worker ran
// the task beside the first command.
func TestWorkCancelNeverRunsATaskTwiceAtOnce(t *testing.T) {
	c, _ := newCLI(t)
	pidFile, overlap := onceEnv(t)
	c.ok("ledger", "admit", "k1", "--seq", "1", "--kind", "slow")
	c.ok("ledger", "admit", "d1", "--seq", "1", "--kind", "other", "--needs", "k1")
	a := c.start("work", "--kind", "slow", "--grace", "2s", "--", "sh", "-c", onceScript)
	pids := readPids(t, pidFile)
	b := c.start("work", "--kind", "slow", "--", "sh", "-c", onceScript)

	out := c.ok("ledger", "cancel", "k1")
	require.Regexp(t, `(?m)^k1\s+running\s+cancelling\s`, out)
	r := c.run("ledger", "reopen", "k1")
	require.NotEqual(t, 0, r.code, "no reopen while the cancelled command runs: %s", r.stdout)
	require.Contains(t, r.stderr, "cancelling")
	require.Contains(t, c.ok("ledger", "show", "k1"), "cancelling")

	// Already asked: --wait waits for the command to be killed.
	out = c.ok("ledger", "cancel", "k1", "--wait", "25s")
	require.Regexp(t, `(?m)^k1\s+cancelling\s+cancelled\s`, out)
	requireGone(t, pids, "after the cancel")
	r = c.run("ledger", "wait", "k1")
	require.Equal(t, waitCancelled, r.code, r.stdout+r.stderr)
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "d1")), &rec))
	require.Equal(t, kvledger.StatusBlocked, rec.Status)
	requireNoOverlap(t, overlap)

	c.ok("ledger", "reopen", "k1")
	r = c.run("ledger", "wait", "k1")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	requireNoOverlap(t, overlap)
	require.Equal(t, 0, b.stop(t).code)
	ra := a.stop(t)
	require.Equal(t, 0, ra.code, ra.stderr)
	require.Regexp(t, `(?m)^cancelled\s+k1\s+attempt 1`, ra.stdout)
}
