package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/natstest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	t.Setenv("NATS_URL", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out))
	t.Log("\n" + out.String())
	require.Regexp(t, `service-a holds report\.daily \(token \d+\)`, out.String())
	require.Contains(t, out.String(), "service-b: the lock is held, waiting for it")
	require.Regexp(t, `service-b holds report\.daily \(token \d+ > \d+\)`, out.String())
	require.Contains(t, out.String(), "was refused: stale fencing token")
	require.Contains(t, out.String(), `store holds "written by service-b"`)
}

// Against an existing server (NATS_URL), as a user would run it.
func TestRunAgainstNATSURL(t *testing.T) {
	n := natstest.WithServer(t)
	t.Setenv("NATS_URL", n.Server.ClientURL())
	var out bytes.Buffer
	require.NoError(t, run(natstest.Context(t, 30*time.Second), &out))
	require.Contains(t, out.String(), `store holds "written by service-b"`)
}
