// Package exampletest runs an example's run function the two ways its
// tests do: on the example's own embedded server, and against an existing
// server through NATS_URL, as a user would run it.
package exampletest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// Run is a run function of an example (its main without the exit).
type Run func(ctx context.Context, out io.Writer) error

// Embedded runs run with NATS_URL unset (so on its embedded server), logs
// what it printed and returns it, and fails t when run fails.
func Embedded(t *testing.T, run Run) string {
	t.Helper()
	t.Setenv("NATS_URL", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out.String()
}

// AgainstNATSURL runs run against a test server given to it through
// NATS_URL and fails t unless it succeeds and prints want.
func AgainstNATSURL(t *testing.T, run Run, want string) {
	t.Helper()
	n := natstest.WithServer(t)
	t.Setenv("NATS_URL", n.Server.ClientURL())
	var out bytes.Buffer
	if err := run(natstest.Context(t, 30*time.Second), &out); err != nil {
		t.Fatalf("run against NATS_URL: %v", err)
	}
	if !strings.Contains(out.String(), want) {
		t.Fatalf("run against NATS_URL printed\n%s\nwithout %q", out.String(), want)
	}
}
