package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/opstats"
)

// /metrics is opstats' text format (one producer of metrics in
// natscoord): every family the dashboard has served keeps its name, with
// HELP and TYPE lines, and the Go runtime's series come along.
func TestMetricsServedThroughOpstats(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "a", nil)
	}, nil)
	resp, err := http.Get(e.Base + "/metrics")
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, opstats.TextContentType, resp.Header.Get("Content-Type"))
	body := string(raw)
	for name, kind := range map[string]opstats.Kind{
		"natscoord_ledger_events_total": opstats.Counter, "natscoord_lease_ends_total": opstats.Counter,
		"natscoord_lease_renewals_total": opstats.Counter, "natscoord_ui_actions_total": opstats.Counter,
		"natscoord_events_lag_seconds": opstats.Gauge, "natscoord_events_pending": opstats.Gauge,
		"natscoord_ledger_tasks": opstats.Gauge, "natscoord_ledger_task_phases": opstats.Gauge,
		"natscoord_ledger_claims_in_flight": opstats.Gauge, "natscoord_lease_held": opstats.Gauge,
		"go_goroutines": opstats.Gauge,
	} {
		require.Contains(t, body, fmt.Sprintf("# TYPE %s %s\n", name, kind))
		require.Regexp(t, `(?m)^# HELP `+name+` \S`, body)
	}
	for _, line := range []string{
		`natscoord_ledger_tasks{status="pending"} 1`,
		`natscoord_ledger_task_phases{phase="pending"} 1`,
		`natscoord_ledger_claims_in_flight 0`,
		`natscoord_lease_renewals_total 0`,
		`natscoord_lease_held{bucket="natscoord_leases",kind="lock"} 0`,
	} {
		require.Contains(t, body, line+"\n")
	}
	// Every sample line is name{labels} value, as a scraper parses it.
	sample := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-z_]+="(?:[^"\\]|\\.)*"(?:,[a-z_]+="(?:[^"\\]|\\.)*")*\})? \S+$`)
	for _, l := range regexp.MustCompile(`(?m)^[^#\n].*$`).FindAllString(body, -1) {
		require.Regexp(t, sample, l)
	}
}

// The dashboard's phase counts (overview, /metrics) are kvledger.Tally's
// over the same records: one definition of phase counting.
func TestPhaseCountsAreTallys(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "later", Delay: time.Hour})
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "soon", Delay: 3 * time.Second})
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "flaky", Kind: "flaky", MaxAttempts: 3})
		e.RunAttempt(t, "flaky", "w1", time.Hour, failWith("boom"))
		dashtest.Admit(t, e.Ledger, "dropped", nil)
		_, err := e.Ledger.Cancel(natstest.Context(t, 5*time.Second), "op", "dropped", "not needed", time.Now())
		require.NoError(t, err)
		dashtest.Admit(t, e.Ledger, "now", nil)
		dashtest.Admit(t, e.Ledger, "done", nil)
		dashtest.RunTask(t, e.Ledger, "done", "w1", kvledger.StatusCompleted)
		dashtest.Admit(t, e.Ledger, "broke", nil)
		dashtest.RunTask(t, e.Ledger, "broke", "w1", kvledger.StatusFailed)
	}, nil)

	ctx := natstest.Context(t, 10*time.Second)
	store, err := kvledger.NewKVStore(ctx, e.Node.NewJS(t), kvledger.KVStoreConfig{Bucket: dashtest.LedgerBucket})
	require.NoError(t, err)
	tally := kvledger.NewTally()
	synced := make(chan struct{})
	w, err := store.WatchRecords(ctx, func(c kvledger.Change) {
		tally.Apply(c, time.Now())
		if c.Synced {
			close(synced)
		}
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	select {
	case <-synced:
	case <-ctx.Done():
		t.Fatal("the record watch did not sync")
	}

	compare := func() bool {
		want := tally.Counts(time.Now())
		over := e.Page(t, "/")
		metrics := e.Page(t, "/metrics")
		for _, p := range kvledger.Phases {
			n := strconv.Itoa(want.ByPhase[p])
			if !regexp.MustCompile(`data-count="`+string(p)+`">`+n+`<`).MatchString(over) ||
				!regexp.MustCompile(`(?m)^natscoord_ledger_task_phases\{phase="`+string(p)+`"\} `+n+`$`).MatchString(metrics) {
				t.Logf("%s: tally %s, overview and metrics differ", p, n)
				return false
			}
		}
		return regexp.MustCompile(`data-count="total">` + strconv.Itoa(want.Total) + `<`).MatchString(over)
	}
	// Retried: a count taken as "soon" comes due may see it either way.
	require.Eventually(t, compare, 10*time.Second, 50*time.Millisecond)
	// "soon" turns pending with no write; both counts follow the clock.
	require.Eventually(t, func() bool { return tally.Counts(time.Now()).ByPhase[kvledger.PhaseScheduled] == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, compare, 10*time.Second, 50*time.Millisecond)
}
