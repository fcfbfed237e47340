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
		"process-1 (process-1) holds transfer-example.nightly-export (fence ",
		"process-1 exported it: ",
		"process-1 guard after export: kvlease: lease exported",
		"process-2 restored the token: the bucket now names process-2 as holder",
		"restoring the same token again is refused: it was used up",
		"process-2 released the lease",
	} {
		require.Contains(t, s, want)
	}
	require.Contains(t, s, "secret: REDACTED", "the token's secret is never printed")
}

func TestRunAgainstNATSURL(t *testing.T) {
	exampletest.AgainstNATSURL(t, run, "process-2 released the lease")
}
