package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// The demo's `natscoord work` processes die with it, even when it is
// killed (SIGKILL) in the middle of the run, and so do the commands they
// run: nothing of a demo outlives it. Nor do they get its secrets. Against a server that stays up
// (--server), so that losing the server is not what ends them. (A child
// that writes a line after the demo died, to its output, a pipe to the
// demo, also dies then, of SIGPIPE: this test does not tell that apart
// from the parent-death signal, which ends the children at once.)
func TestDemoChildrenDieWithIt(t *testing.T) {
	demoChildren(t)
	n := natstest.WithServer(t)
	var out natstest.SyncBuffer
	demo := exec.Command(os.Args[0], "demo", "--server", n.Server.ClientURL(), "--deadline", "60s")
	const token = "ui-token-Xyzzy-4711" // a secret of the demo's: its children never see it
	demo.Env = append(os.Environ(), cliProcessEnv+"=1", "NATSCOORD_UI_TOKEN="+token)
	demo.Stdout, demo.Stderr = &out, &out
	require.NoError(t, demo.Start())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = demo.Wait()
	}()
	t.Cleanup(func() {
		_ = demo.Process.Kill()
		natstest.WaitClosed(t, done, 30*time.Second, "the demo to end")
	})
	// Once a shell task has run, both workers are up.
	natstest.Eventually(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "lint        done by work-") },
		"a shell task ran: %q", &out)
	var family []int
	natstest.Eventually(t, 10*time.Second, func() bool {
		family = descendants(t, demo.Process.Pid)
		return len(family) >= 2
	}, "the demo's workers are its children")
	for _, pid := range family {
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err == nil {
			require.NotContains(t, string(env), token, "the environment of %d", pid)
		}
	}
	require.NoError(t, demo.Process.Kill())
	natstest.WaitClosed(t, done, 30*time.Second, "the demo to die")
	requireGone(t, family, "the processes the demo started")
}

// descendants lists the processes below pid (Linux: /proc).
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	parent := map[int]int{}
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		pp, _ := strconv.Atoi(fields[1])
		parent[p] = pp
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
