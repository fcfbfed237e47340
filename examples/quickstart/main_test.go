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
	require.Regexp(t, `service-a holds report\.daily \(token \d+\)`, s)
	require.Contains(t, s, "service-b: the lock is held, waiting for it")
	require.Regexp(t, `service-b holds report\.daily \(token \d+ > \d+\)`, s)
	require.Contains(t, s, "was refused: stale fencing token")
	require.Contains(t, s, `store holds "written by service-b"`)
}

func TestRunAgainstNATSURL(t *testing.T) {
	exampletest.AgainstNATSURL(t, run, `store holds "written by service-b"`)
}
