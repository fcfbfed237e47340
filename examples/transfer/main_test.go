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
	for _, want := range []string{
		"process-1 (process-1) holds transfer-example.nightly-export (fence ",
		"process-1 exported it: ",
		"process-1 guard after export: kvlease: lease exported",
		"process-2 restored the token: the bucket now names process-2 as holder",
		"restoring the same token again is refused: it was used up",
		"process-2 released the lease",
	} {
		require.Contains(t, out.String(), want)
	}
	require.Contains(t, out.String(), "secret: REDACTED", "the token's secret is never printed")
}

// Against an existing server (NATS_URL), as a user would run it.
func TestRunAgainstNATSURL(t *testing.T) {
	n := natstest.WithServer(t)
	t.Setenv("NATS_URL", n.Server.ClientURL())
	var out bytes.Buffer
	require.NoError(t, run(natstest.Context(t, 30*time.Second), &out))
	require.Contains(t, out.String(), "process-2 released the lease")
}
