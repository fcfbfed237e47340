package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// chartT is the chart-column attribute of minute m after t0.
func chartT(t0 time.Time, m int) string {
	return t0.Add(time.Duration(m) * time.Minute).UTC().Format(time.RFC3339)
}

// chartColumn returns the numbers (data-n: one per series, in legend
// order) of the column of minute (RFC 3339, UTC) in chart id ("finished"
// or "backlog") of an overview body; ok is false when the chart or the
// column is missing.
func chartColumn(body, id, minute string) (string, bool) {
	i := strings.Index(body, `id="chart-`+id+`"`)
	if i < 0 {
		return "", false
	}
	svg := body[i:]
	svg = svg[:strings.Index(svg, "</svg>")]
	marker := `data-t="` + minute + `" data-n="`
	j := strings.Index(svg, marker)
	if j < 0 {
		return "", false
	}
	rest := svg[j+len(marker):]
	return rest[:strings.IndexByte(rest, '"')], true
}

// finish claims key and completes it with status at the time now, as its
// worker's clock states it.
func finish(t *testing.T, l *kvledger.Ledger, key string, status kvledger.Status, now time.Time) {
	t.Helper()
	ctx := natstest.Context(t, 5*time.Second)
	k := kvledger.IdempotencyKey(key)
	f, err := l.Claim(ctx, dashtest.Source, k, "w1", time.Hour, now)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, dashtest.Source, k, "w1", f, status, now))
}

// waitColumn waits until the overview shows want in a chart's column.
func waitColumn(t *testing.T, get func() string, id, minute, want string) {
	t.Helper()
	var got string
	natstest.Eventually(t, 10*time.Second, func() bool {
		got, _ = chartColumn(get(), id, minute)
		return got == want
	}, "the %s chart's column %s shows %q", id, minute, want)
}

// The overview's charts count, per minute of the dashboard's clock,
// the tasks completed and failed (ledger.completed events, by the time
// their write states) and the tasks in phase pending per kind as each
// minute ended; the current minute's backlog is the one now.
func TestChartsCountFinishesAndBacklogPerMinute(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewManual(t0)
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) { c.Clock = clk })
	page := func() string { return e.Page(t, "/fragment/overview") }
	for i := range 3 {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("mail-%d", i)), Kind: "mail"})
	}
	dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "sms-0", Kind: "sms"})
	waitColumn(t, page, "backlog", chartT(t0, 0), "3 1")
	b := page()
	require.Contains(t, b, `aria-labelledby="chart-finished-title chart-finished-desc"`)
	require.Contains(t, b, "Ready backlog per kind")
	col, ok := chartColumn(b, "backlog", chartT(t0, -1))
	require.True(t, ok)
	require.Empty(t, col, "no sample from before the dashboard started")

	// Minute 12:00: one completed, one failed.
	clk.Advance(10 * time.Second)
	finish(t, e.Ledger, "mail-0", kvledger.StatusCompleted, clk.Now())
	finish(t, e.Ledger, "sms-0", kvledger.StatusFailed, clk.Now())
	waitColumn(t, page, "finished", chartT(t0, 0), "1 1")
	waitColumn(t, page, "backlog", chartT(t0, 0), "2") // sms has no backlog left in the hour: no series

	// 12:01: the sample of 12:00 is the backlog as it ended; one more
	// completed, counted in its own minute.
	clk.Advance(time.Minute)
	finish(t, e.Ledger, "mail-1", kvledger.StatusCompleted, clk.Now())
	waitColumn(t, page, "finished", chartT(t0, 1), "1 0")
	waitColumn(t, page, "backlog", chartT(t0, 1), "1")
	b = page()
	for m, want := range map[int]string{0: "1 1", 1: "1 0", -1: "0 0", -58: "0 0"} {
		got, ok := chartColumn(b, "finished", chartT(t0, m))
		require.True(t, ok, "column %d", m)
		require.Equal(t, want, got, "finished in minute %d", m)
	}
	got, _ := chartColumn(b, "backlog", chartT(t0, 0))
	require.Equal(t, "2", got, "12:00 ended with two mails pending (sms left the chart)")
	require.Contains(t, b, `<b id="tp1">1</b> finished in the last minute`)

	// An hour on, the minutes of 12:00 have left the window.
	clk.Advance(time.Hour)
	b = page()
	_, ok = chartColumn(b, "finished", chartT(t0, 1))
	require.False(t, ok)
	got, _ = chartColumn(b, "finished", chartT(t0, 61))
	require.Equal(t, "0 0", got)
	got, _ = chartColumn(b, "backlog", chartT(t0, 60))
	require.Equal(t, "1", got, "the backlog sampled each minute meanwhile, with no write")
}

// The backlog chart names the chartKinds kinds with the highest backlog
// in the hour and draws the rest as "other kinds".
func TestChartsBacklogNamesTheLargestKinds(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewManual(t0)
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		for k := 1; k <= 10; k++ {
			for i := range k {
				dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("k%02d-%d", k, i)), Kind: fmt.Sprintf("kind%02d", k)})
			}
		}
	}, func(c *dashboard.Config) { c.Clock = clk })
	b := e.Page(t, "/")
	col, _ := chartColumn(b, "backlog", chartT(t0, 0))
	require.Equal(t, "10 9 8 7 6 5 4 3 3", col, "eight kinds by name, largest first; kinds 1 and 2 together")
	legend := b[strings.Index(b, `id="chart-backlog"`):]
	legend = legend[strings.Index(legend, `class="legend"`):]
	legend = legend[:strings.Index(legend, "</p>")]
	require.Contains(t, legend, "kind10")
	require.Contains(t, legend, "kind03")
	require.NotContains(t, legend, "kind02")
	require.Contains(t, legend, "other kinds")
}

// A dashboard started later shows the finishes of the last hour: it
// reads them from the ledger bucket's stream, also those written long
// before the events its events page keeps.
func TestChartsAfterRestartShowTheLastHourFromTheStream(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewManual(t0)
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) { c.Clock = clk })
	for _, k := range []string{"old", "a", "b", "c", "d"} {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: kvledger.IdempotencyKey(k), Kind: "mail"})
	}
	finish(t, e.Ledger, "old", kvledger.StatusCompleted, t0.Add(-61*time.Minute))
	finish(t, e.Ledger, "a", kvledger.StatusCompleted, t0.Add(-30*time.Minute))
	finish(t, e.Ledger, "b", kvledger.StatusFailed, t0.Add(-30*time.Minute+30*time.Second))
	finish(t, e.Ledger, "c", kvledger.StatusCompleted, t0.Add(-4*time.Minute))
	// A cancellation leaves the task failed, but it did not finish.
	_, err := e.Ledger.Cancel(natstest.Context(t, 5*time.Second), dashtest.Source, "d", "not needed", t0.Add(-3*time.Minute))
	require.NoError(t, err)
	// More writes than the events page keeps, after the completions.
	for i := range 250 {
		dashtest.Admit(t, e.Ledger, fmt.Sprintf("later-%d", i), nil)
	}
	require.NoError(t, e.Handler.Close())

	var h *dashboard.Handler
	h, err = dashboard.New(natstest.Context(t, 10*time.Second), dashboard.Config{JS: e.Node.NewJS(t), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	page := func() string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/", nil))
		require.Equal(t, http.StatusOK, rec.Code)
		return rec.Body.String()
	}
	waitColumn(t, page, "finished", chartT(t0, -30), "1 1")
	waitColumn(t, page, "finished", chartT(t0, -4), "1 0")
	b := page()
	require.NotContains(t, b, "still reading the last hour")
	require.Contains(t, b, "2 completed and 1 failed in all", "the completion of 61 minutes ago is not in the hour")
	require.Contains(t, b, "<b>1</b> in the last 5 minutes", "the throughput figures read the same counts")
}

// Open pages are told to move their charts along as each minute ends,
// but only while the last hour holds something to draw: an idle
// dashboard sends nothing.
func TestChartsMoveAlongOnlyWhileTheHourHoldsSomething(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewManual(t0)
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) { c.Clock = clk })
	s := e.OpenSSE(t)
	clk.Advance(time.Minute) // nothing in the hour: no push
	dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "m1", Kind: "mail"})
	for {
		data := s.WaitFor(t, "event: ")
		require.NotEqual(t, "data: {}", data, "a chart push while the hour held nothing")
		if strings.Contains(data, `"key":"m1"`) {
			break
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		got, _ := chartColumn(e.Page(t, "/"), "backlog", chartT(t0, 1))
		return got == "1"
	}, "the view holds m1")
	clk.Advance(time.Minute) // the minute ended with m1 pending
	s.WaitFor(t, "event: chart")
}
