package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A server outage longer than the claims' TTL while a task is claimed
// ahead (its command not started): the claim ahead is given back, its
// attempt not counted, and `work` says so; every task's attempts, as
// `ledger show` counts them, are the runs of its command, and `work`'s
// lines agree with the record. Before, the claim ahead was printed lost
// and its task used an attempt its command never ran.
func TestWorkOutageGivesBackClaimsAhead(t *testing.T) {
	s := natstest.StartRestartable(t)
	c := &cli{t: t, url: s.ClientURL()}
	dir := t.TempDir()
	runs, goFile := filepath.Join(dir, "runs"), filepath.Join(dir, "go")
	t.Setenv("RUNS", runs)
	t.Setenv("GO", goFile)
	keys := []string{"k01", "k02", "k03"}
	for _, k := range keys {
		c.ok("ledger", "admit", k, "--seq", "1", "--kind", "k")
	}
	// One command at a time, one claim ahead (work's default); each
	// command logs its start and its SIGTERM, and waits for the go file.
	w := c.startProcess("work", "--kind", "k", "--ttl", "2s", "--grace", "1s", "--", "sh", "-c",
		`echo "$NATSCOORD_TASK_KEY" >> "$RUNS"; trap 'echo TERM >> "$RUNS"; exit 143' TERM; while [ ! -f "$GO" ]; do sleep 0.05; done`)
	read := func() string { b, _ := os.ReadFile(runs); return string(b) }
	status := func(k string) kvledger.TaskState {
		var rec kvledger.TaskState
		require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "show", k)), &rec))
		return rec
	}
	// Which task runs first is the dispatcher's; the test follows it.
	var first, ahead string
	natstest.Eventually(t, 20*time.Second, func() bool { first = strings.TrimSpace(read()); return first != "" }, "a command starts")
	natstest.Eventually(t, 20*time.Second, func() bool {
		for _, k := range keys {
			if k != first && status(k).Status == kvledger.StatusClaimed {
				ahead = k
				return true
			}
		}
		return false
	}, "a task is claimed ahead")
	require.Equal(t, 1, status(ahead).Attempts)
	require.Equal(t, first+"\n", read(), "one command runs")

	// The outage: until the worker's claims are lost (k01's command is
	// stopped), which is ClaimTTL after the last renewal.
	s.Stop()
	natstest.Eventually(t, 20*time.Second, func() bool { return strings.Contains(read(), "TERM") }, "the running command is stopped: the claims are lost")
	s.Start()
	natstest.Eventually(t, 30*time.Second, func() bool { return strings.Contains(w.err.String(), "natscoord work: reconnected to ") },
		"the worker reconnects: %q", &w.err)
	require.NoError(t, os.WriteFile(goFile, nil, 0o600))
	for _, k := range keys {
		r := c.run("ledger", "wait", k)
		require.Equal(t, waitCompleted, r.code, "%s: %s", k, r.stderr)
	}
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGINT))
	natstest.WaitClosed(t, w.done, 30*time.Second, "the worker to drain and stop")
	out := w.out.String()
	t.Logf("work printed:\n%s\nruns:\n%s", out, read())

	for _, k := range keys {
		ran := strings.Count(read(), k+"\n")
		rec := status(k)
		require.Equal(t, ran, rec.Attempts, "%s: the attempts the record counts are the runs of its command\n%s", k, out)
		// work's line for the completion names the record's attempt.
		require.Regexp(t, `(?m)^completed\s+`+k+`\s+attempt `+itoa(rec.Attempts)+`\s+fence `+itoa(int(rec.Fence))+`\s`, out)
	}
	// The task claimed ahead waited for a handler slot when the claims
	// were lost: given back, not lost, and its attempt not counted.
	require.NotRegexp(t, `(?m)^lost\s+`+ahead+`\s`, out)
	require.Regexp(t, `(?m)^released\s+`+ahead+`\s+attempt 1\s`, out)
	// The first one's command ran when the claims were lost: that
	// attempt is lost, as the record says (taken over), and counted.
	require.Regexp(t, `(?m)^lost\s+`+first+`\s+attempt 1\s`, out)
	m := regexp.MustCompile(`(?m)^natscoord work: stopped: .*, (\d+) given back, \d+ snoozed, \d+ cancelled, (\d+) lost$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.Equal(t, "1", m[1], "given back: the claim ahead")
	require.Equal(t, "1", m[2], "lost: the first command's attempt")
}

func itoa(n int) string { return strconv.Itoa(n) }
