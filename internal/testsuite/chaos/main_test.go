package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// childEnv selects a child-process role: the test binary re-executes
// itself with this variable set, and TestMain runs the role instead of the
// tests (see children_test.go).
const childEnv = "NATSCOORD_CHAOS_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	natstest.VerifyTestMain(m)
}

// child is a re-executed test binary running one role. It ends when its
// stdin closes (the parent's end of the pipe, closed by Stop) or when it
// is killed.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout lines; closed at EOF
	stderr natstest.SyncBuffer
	waited chan struct{}
	err    error
}

// startChild runs role with env (KEY=VALUE) added and waits for its first
// stdout line, which it returns.
func startChild(t *testing.T, role string, env ...string) (*child, string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	c := &child{lines: make(chan string, 64), waited: make(chan struct{})}
	c.cmd = exec.Command(exe, "-test.run=^$")
	c.cmd.Env = append(append(os.Environ(), childEnv+"="+role), env...)
	c.cmd.Stderr = &c.stderr
	r, w, err := os.Pipe()
	require.NoError(t, err)
	c.cmd.Stdout = w
	c.stdin, err = c.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	_ = w.Close()
	go func() { // ends at EOF: the child exited or closed stdout
		defer close(c.lines)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	go func() {
		c.err = c.cmd.Wait()
		close(c.waited)
	}()
	t.Cleanup(func() {
		c.Kill(t)
		for range c.lines { //nolint:revive // drain so the reader ends
		}
	})
	select {
	case line, ok := <-c.lines:
		require.True(t, ok, "child %s exited early: %s", role, c.stderr.String())
		return c, line
	case <-time.After(30 * time.Second):
		c.Kill(t)
		t.Fatalf("child %s did not start: %s", role, c.stderr.String())
	}
	return nil, ""
}

// Kill sends SIGKILL (if still running) and waits for the process.
func (c *child) Kill(t *testing.T) {
	t.Helper()
	select {
	case <-c.waited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-c.waited:
	case <-time.After(30 * time.Second):
		t.Fatalf("child %d did not die", c.cmd.Process.Pid)
	}
}

// Stop closes the child's stdin (its signal to shut down cleanly) and
// waits for it to exit.
func (c *child) Stop(t *testing.T) {
	t.Helper()
	_ = c.stdin.Close()
	select {
	case <-c.waited:
	case <-time.After(30 * time.Second):
		c.Kill(t)
	}
}

// runChild runs a child role and returns the process exit code.
func runChild(role string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the parent closing stdin (or dying) ends the child
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	var err error
	switch role {
	case "server":
		err = childServer(ctx)
	case "holder":
		err = childHolder(ctx)
	case "ledgerwriter":
		err = childLedgerWriter(ctx)
	case "taskworker":
		err = childTaskWorker(ctx)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// say writes one line to the parent.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stdout, strings.TrimSuffix(format, "\n")+"\n", args...)
}
