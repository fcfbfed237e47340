package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestElectRunsCommandWhileLeader(t *testing.T) {
	c, _ := newCLI(t)
	r := c.run("elect", "scheduler main", "10.0.0.1:8080", "--", "sh", "-c",
		`echo "$NATSCOORD_ELECTION|$NATSCOORD_ELECTION_TERM|$NATSCOORD_ELECTION_VALUE"; exit 2`)
	require.Equal(t, 2, r.code, r.stderr)
	f := strings.Split(strings.TrimSpace(r.stdout), "|")
	require.Len(t, f, 3)
	require.Equal(t, "scheduler main", f[0])
	term, err := strconv.ParseUint(f[1], 10, 64)
	require.NoError(t, err)
	require.Positive(t, term)
	require.Equal(t, "10.0.0.1:8080", f[2])

	// It resigned after the command: the next candidate leads at once.
	c.ok("elect", "scheduler main", "second", "--wait", "5s", "--", "true")
}

// elect --observe prints the current state, then every leader and every
// vacancy, and stops after --count changes.
func TestElectObserve(t *testing.T) {
	c, _ := newCLI(t)
	require.Contains(t, c.fail("elect", "--observe", "sched"), "does not exist", "observing creates nothing")
	c.ok("elect", "sched", "warmup", "--", "true") // the bucket exists now; sched is vacant

	obs := c.start("--json", "elect", "--observe", "sched", "--count", "4")
	natstest.Eventually(t, 20*time.Second, func() bool { return strings.Count(obs.out.String(), "\n") >= 1 })
	c.ok("elect", "sched", "A", "--", "sleep", "0.2")
	c.ok("elect", "sched", "B", "--", "sleep", "0.2")
	require.Equal(t, 0, obs.wait(t), obs.err.String())

	var lines []leaderLine
	for _, l := range strings.Split(strings.TrimSpace(obs.out.String()), "\n") {
		var ll leaderLine
		require.NoError(t, json.Unmarshal([]byte(l), &ll), l)
		lines = append(lines, ll)
	}
	require.Len(t, lines, 4)
	require.True(t, lines[0].Vacant)
	require.Equal(t, "A", lines[1].Value)
	require.True(t, lines[2].Vacant, "the resignation is reported")
	require.Equal(t, "B", lines[3].Value)
	require.Greater(t, lines[3].Term, lines[1].Term)

	// The human form, interrupted: exit 0.
	obs = c.start("elect", "--observe", "sched")
	natstest.Eventually(t, 20*time.Second, func() bool { return strings.Contains(obs.out.String(), "vacant") })
	obs.cancel()
	require.Equal(t, 0, obs.wait(t), obs.err.String())
}

// Losing the leadership terminates the command.
func TestElectLostTerminatesCommand(t *testing.T) {
	c, _ := newCLI(t)
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	b := c.start("elect", "--ttl", "1s", "lead", "me", "--", "sh", "-c", `echo ok > `+ready+`; while :; do sleep 0.02; done`)
	waitFile(t, ready, "ok")
	var rows []lockRow
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lock", "ls")), &rows))
	require.Len(t, rows, 1)
	c.ok("lease", "release", rows[0].Lease, "--force")
	require.Equal(t, 128+15, b.wait(t), "the shell dies of the SIGTERM")
	require.Contains(t, b.err.String(), `leadership of "lead" lost while the command ran`)
}

// Without a command, elect leads until interrupted and then resigns.
func TestElectHoldsUntilInterrupted(t *testing.T) {
	c, _ := newCLI(t)
	b := c.start("elect", "hold", "v1")
	natstest.Eventually(t, 20*time.Second, func() bool { return strings.Contains(b.out.String(), "leading hold with v1 (term ") })
	b.cancel()
	require.Equal(t, 0, b.wait(t), b.err.String())
	var rows []lockRow
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "lock", "ls")), &rows))
	require.Empty(t, rows, "resigned")
}

func TestElectBadInput(t *testing.T) {
	c, _ := newCLI(t)
	for _, args := range [][]string{
		{"elect"},
		{"elect", "name"},                        // no value
		{"elect", "name", "v", "cmd"},            // a command without --
		{"elect", "name", "v", "--"},             // nothing after --
		{"elect", "--observe"},                   // no name
		{"elect", "--observe", "a", "b"},         // two names
		{"elect", "--observe", "a", "--", "cmd"}, // observing runs nothing
		{"elect", "--observe", "a", "--count", "-1"},
		{"elect", "a", "v", "--count", "2"}, // --count without --observe
		{"elect", "", "v"},
	} {
		c.fail(args...)
	}
}
