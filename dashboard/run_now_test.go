package dashboard_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// The task page of a scheduled task offers Run now, bound to the
// revision shown: a form whose revision is stale is refused and writes
// nothing; the current one makes the task ready, its timeline says so.
// A task that is due already is not offered the button.
func TestRunNowAction(t *testing.T) {
	e := operatorEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "due", Kind: "mail", Seq: 1})
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "later", Kind: "mail", Seq: 1, Delay: time.Hour})
	}, nil)
	ctx := natstest.Context(t, 10*time.Second)
	rec, _, err := e.Ledger.State(ctx, "later")
	require.NoError(t, err)
	require.Greater(t, rec.Rev, uint64(1))
	rev := strconv.FormatUint(rec.Rev, 10)

	body := e.Page(t, "/task?key=later")
	require.Contains(t, body, `id="run-now" href="/confirm?do=run-now&amp;key=later&amp;rev=`+rev+`"`)
	require.NotContains(t, e.Page(t, "/task?key=due"), `id="run-now"`, "a due task has nothing to run now")

	confirm := e.Page(t, "/confirm?do=run-now&key=later&rev="+rev)
	require.Contains(t, confirm, "Run task later now")
	require.Contains(t, confirm, `name="rev" value="`+rev+`"`)
	csrf := dashtest.CSRFOf(t, confirm)

	stale := url.Values{"do": {"run-now"}, "key": {"later"}, "rev": {strconv.FormatUint(rec.Rev-1, 10)}, "csrf": {csrf}}
	resp := e.Post(t, stale, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "failed")
	after, _, err := e.Ledger.State(ctx, "later")
	require.NoError(t, err)
	require.Equal(t, rec.Rev, after.Rev, "a stale form writes nothing")

	s := e.OpenSSE(t)
	form := url.Values{"do": {"run-now"}, "key": {"later"}, "rev": {rev}, "csrf": {csrf}}
	resp = e.Post(t, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.NotContains(t, resp.Header.Get("Location"), "failed")
	s.WaitFor(t, "event: ledger", `"ref":"later"`, `"phase":"pending"`)
	after, _, err = e.Ledger.State(ctx, "later")
	require.NoError(t, err)
	require.Equal(t, kvledger.RunNowEvent, after.LastEvent)
	page := e.Page(t, "/task?key=later")
	require.Contains(t, page, "<b>ledger.run_now</b>")
	require.NotContains(t, page, `id="run-now"`)
}
