package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/examples/internal/exampletest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	s := exampletest.Embedded(t, run)
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
