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
	for _, pid := range pids {
		natstest.Eventually(t, 20*time.Second, func() bool { return !alive(pid) }, "%s: pid %d still runs", what, pid)
	}
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
