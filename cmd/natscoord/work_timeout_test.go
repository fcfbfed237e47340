package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// A task's timeout (ledger admit --timeout, else work --timeout) stops
// its command: SIGTERM, then SIGKILL --grace later for one that ignores
// it. The attempt fails with the timeout and is retried, and the retry
// starts only after the first command was killed: never two at once.
func TestWorkTimeout(t *testing.T) {
	c, _ := newCLI(t)
	log := filepath.Join(t.TempDir(), "starts")
	t.Setenv("STARTS", log)
	c.ok("ledger", "admit", "own", "--seq", "1", "--kind", "slow", "--timeout", "150ms", "--max-attempts", "2")
	c.ok("ledger", "admit", "dflt", "--seq", "1", "--kind", "slow", "--max-attempts", "1")
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "own")), &rec))
	require.Equal(t, 150, rec.TimeoutMS)
	require.Regexp(t, `(?m)^timeout\s+150ms$`, c.ok("ledger", "show", "own"))

	work := c.start("work", "--kind", "slow", "--concurrency", "2", "--timeout", "300ms", "--grace", "500ms", "--backoff", "10ms", "--",
		"sh", "-c", `trap '' TERM; echo "$NATSCOORD_TASK_KEY $NATSCOORD_TASK_ATTEMPT $(date +%s%N)" >> "$STARTS"; sleep 30`)
	r := c.run("ledger", "wait", "own", "dflt")
	require.Equal(t, waitFailed, r.code, r.stderr)

	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "own")), &rec))
	require.Equal(t, 2, rec.Attempts)
	require.Contains(t, rec.LastError, "worker: task timed out after 150ms")
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "dflt")), &rec))
	require.Contains(t, rec.LastError, "worker: task timed out after 300ms")

	b, err := os.ReadFile(log)
	require.NoError(t, err)
	starts := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 3, line)
		ns, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err)
		starts[f[0]+"/"+f[1]] = ns
	}
	require.Len(t, starts, 3, string(b))
	gap := time.Duration(starts["own/2"] - starts["own/1"])
	// The timeout's timer starts before the shell logs its start (a
	// loaded machine takes tens of ms to get there), so the gap's floor
	// is the --grace alone: a retry that did not wait for the SIGKILL
	// would start 150ms + the backoff after the first.
	require.GreaterOrEqual(t, gap, 500*time.Millisecond, "the retry waited for the SIGKILL --grace after the timeout")

	out := work.stop(t)
	require.Equal(t, 0, out.code, out.stderr)
	require.Regexp(t, `(?m)^retried\s+own\s+attempt 1 .*timed out after 150ms`, out.stdout)
}

// An exit status given to --snooze-exit snoozes the task: it runs again
// after --snooze, the attempt not counted, the record counting the
// snooze.
func TestWorkSnoozeExit(t *testing.T) {
	c, _ := newCLI(t)
	mark := filepath.Join(t.TempDir(), "snoozed")
	t.Setenv("MARK", mark)
	c.ok("ledger", "admit", "nap", "--seq", "1", "--kind", "nap", "--max-attempts", "1")
	work := c.start("work", "--kind", "nap", "--snooze-exit", "75", "--snooze", "20ms", "--",
		"sh", "-c", `if [ ! -e "$MARK" ]; then echo x > "$MARK"; exit 75; fi; echo "attempt $NATSCOORD_TASK_ATTEMPT"`)
	r := c.run("ledger", "wait", "nap")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	var rec kvledger.TaskState
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", "nap")), &rec))
	require.Equal(t, 1, rec.Attempts, "the snoozed run used no attempt: MaxAttempts 1 was enough")
	require.Equal(t, 1, rec.Snoozes)
	require.JSONEq(t, `"attempt 1"`, string(rec.Result))
	require.Regexp(t, `(?m)^snoozes\s+1$`, c.ok("ledger", "show", "nap"))
	out := work.stop(t)
	require.Equal(t, 0, out.code, out.stderr)
	require.Regexp(t, `(?m)^snoozed\s+nap\s+attempt 1 `, out.stdout)
	require.Contains(t, out.stdout, "1 completed, 0 retried, 0 failed, 0 given back, 1 snoozed")
}
