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
	s := out.String()
	t.Log("\n" + s)
	for _, want := range []string{
		"ledger.completed   lint     failed",
		"ledger.blocked     package  blocked",
		"ledger.blocked     publish  blocked",
		"  docs     completed",
		"  test     completed",
		"  package  blocked (blocked by lint)",
		"  publish  blocked (blocked by lint)",
	} {
		require.Contains(t, s, want)
	}
}
