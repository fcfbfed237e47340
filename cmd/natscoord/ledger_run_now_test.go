package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// `ledger run-now` makes scheduled tasks ready: by key at once; by
// filter only with --yes, after printing what the filter picks (as
// --dry-run does); a task that is neither scheduled nor retrying is
// refused.
func TestLedgerRunNow(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "mail.1", "--seq", "1", "--kind", "mail", "--delay", "1h")
	c.ok("ledger", "admit", "mail.2", "--seq", "1", "--kind", "mail", "--delay", "1h")
	c.ok("ledger", "admit", "mail.3", "--seq", "1", "--kind", "mail")
	c.ok("ledger", "admit", "one", "--seq", "1", "--kind", "other", "--delay", "1h")
	l := openTestLedger(t, n)
	require.Equal(t, kvledger.PhaseScheduled, taskPhase(t, l, "mail.1"))

	// reopen points a task waiting for its time to run-now.
	require.Contains(t, c.fail("ledger", "reopen", "one"), `record is not failed: "one" is pending; to run it now: natscoord ledger run-now one`)

	// A key: at once.
	c.ok("ledger", "run-now", "one")
	require.Equal(t, kvledger.PhasePending, taskPhase(t, l, "one"))
	s, _, err := l.State(natstest.Context(t, 10*time.Second), "one")
	require.NoError(t, err)
	require.Equal(t, kvledger.RunNowEvent, s.LastEvent)
	require.Zero(t, s.Attempts)

	// A filter without --yes prints what it picks and changes nothing.
	r := c.run("ledger", "run-now", "--kind", "mail")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "nothing changed: add --yes to run now the 2 task(s)")
	require.Contains(t, r.stdout, "mail.1  scheduled  would run now")
	require.Contains(t, r.stdout, "mail.2  scheduled  would run now")
	require.Equal(t, map[string]string{"mail.1": "would run now", "mail.2": "would run now"},
		opReport(t, c.ok("--json", "ledger", "run-now", "--kind", "mail", "--dry-run")))
	require.Equal(t, kvledger.PhaseScheduled, taskPhase(t, l, "mail.1"))
	require.Equal(t, kvledger.PhaseScheduled, taskPhase(t, l, "mail.2"))

	require.Equal(t, map[string]string{"mail.1": "made ready", "mail.2": "made ready"},
		opReport(t, c.ok("--json", "ledger", "run-now", "--kind", "mail", "--yes")))
	require.Equal(t, kvledger.PhasePending, taskPhase(t, l, "mail.1"))
	require.Equal(t, kvledger.PhasePending, taskPhase(t, l, "mail.2"))

	finish(t, l, "mail.3", kvledger.StatusCompleted)
	require.Contains(t, c.fail("ledger", "run-now", "mail.3"), "not scheduled or retrying")
}
