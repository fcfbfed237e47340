package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
)

// childEnv selects a child-process role: the test binary re-executes
// itself with it set and TestMain runs the role instead of the benchmarks.
// The scale benchmark runs its server in a child so that the heap, RSS and
// goroutines it reports are the lease manager's alone.
const childEnv = "NATSCOORD_BENCH_CHILD"

// runChild runs a role until the parent closes stdin; it returns the exit
// code.
func runChild(role string) int {
	if role != "server" {
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		return 2
	}
	ctx := context.Background()
	s, err := embedded.Start(ctx, embedded.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	fmt.Printf("ready %s\n", s.ClientURL())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it (or dies)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// childServer starts an embedded server in a child process and returns
// its client URL; b.Cleanup stops it.
func childServer(b *testing.B) string {
	b.Helper()
	exe, err := os.Executable()
	require.NoError(b, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=server")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	waited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
		waited <- cmd.Wait()
	}()
	b.Cleanup(func() {
		_ = stdin.Close()
		select {
		case err := <-waited:
			require.NoError(b, err, "child server exit")
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
			b.Error("child server did not stop")
		}
	})
	select {
	case line := <-lines:
		url, ok := strings.CutPrefix(line, "ready ")
		require.True(b, ok, "child said %q", line)
		return url
	case <-time.After(30 * time.Second):
		b.Fatal("child server did not start")
	}
	return ""
}
