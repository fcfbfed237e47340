package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestMain(m *testing.M) {
	// The test binary is natscoord as well: the supervisor of the
	// commands `work` runs (it starts /proc/self/exe), and the CLI of the
	// tests that must run it as a process of its own (startProcess).
	maybeSupervise()
	// The demo's `natscoord work` children (its own executable, here the
	// test binary) get an environment without NATSCOORD_* (commandEnv):
	// their first argument says what they are.
	if os.Getenv(cliProcessEnv) == "1" || (len(os.Args) > 1 && os.Args[1] == "work") {
		main()
	}
	natstest.VerifyTestMain(m)
}

// cliProcessEnv makes the test binary run as natscoord (startProcess).
const cliProcessEnv = "NATSCOORD_TEST_RUN_CLI"

// result is one CLI invocation's outcome.
type result struct {
	code   int
	stdout string
	stderr string
}

// runCLI runs one command line through run, bounded by 30 s.
func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	return runCLIWith(t, os.Stdin, args...)
}

// runCLIWith is runCLI with the given stdin.
func runCLIWith(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := runIO(ctx, args, stdin, &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}
