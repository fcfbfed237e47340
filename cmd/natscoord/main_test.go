package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/natstest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

// result is one CLI invocation's outcome.
type result struct {
	code   int
	stdout string
	stderr string
}

// runCLI runs one command line through run, bounded by 30 s.
func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return runCLICtx(ctx, args...)
}

func runCLICtx(ctx context.Context, args ...string) result {
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}
