package dashboard_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

var resumeRev = regexp.MustCompile(`name="do" value="resume"><input type="hidden" name="rev" value="(\d+)">`)

// The overview lists each kind with a pause toggle: Pause holds the
// kind's tasks from a running worker, the overview shows it paused (live,
// by push), and Resume, bound to the pause's revision shown, lets them
// run. A resume at a revision that is no longer the pause's is refused.
func TestOverviewPauseToggle(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "m1", Seq: 1, Kind: "mail", Task: []byte(`{}`)})
	}, nil)
	s := e.OpenSSE(t)
	body := e.Page(t, "/")
	require.Contains(t, body, `<tr data-kind="mail"><td><code>mail</code></td><td><a href="/tasks?kind=mail&amp;status=pending">1</a></td>`)
	require.Contains(t, body, `data-toggle="pause">Pause</button>`)
	form := url.Values{"do": {"pause"}, "key": {"mail"}, "csrf": {dashtest.CSRFOf(t, body)}}
	resp := e.Post(t, form, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "done=pause+mail%3A+done")
	s.WaitFor(t, "event: pause", `"kind":"mail"`, `"paused":true`)
	bulk := e.Post(t, url.Values{"do": {"pause"}, "bulk": {"1"}, "task": {"1:m1"}, "csrf": form["csrf"]}, nil)
	require.Equal(t, http.StatusBadRequest, bulk.StatusCode)
	msg, err := io.ReadAll(bulk.Body)
	require.NoError(t, err)
	require.Contains(t, string(msg), "pause is not a bulk action")

	store := e.Ledger.Store().(*kvledger.KVStore)
	p, found, err := store.LoadPause(natstest.Context(t, 5*time.Second), "mail")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, kvledger.Actor("natscoord-ui"), p.Actor)

	// A worker started now holds the kind's tasks back.
	e.StartWorker(t, "w1", "mail", "mark")
	dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "mk", Seq: 1, Kind: "mark", Task: []byte(`{}`)})
	_, err = e.Ledger.WaitFinal(natstest.Context(t, 20*time.Second), "mk")
	require.NoError(t, err)
	rec, _, err := e.Ledger.Store().Load(natstest.Context(t, 5*time.Second), "m1")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusPending, rec.Status, "a paused kind's task waits")
	require.Zero(t, rec.Attempts)

	body = e.Page(t, "/")
	require.Contains(t, body, `<tr data-kind="mail" class="paused">`)
	require.Contains(t, body, `<b class="status-failed">paused</b> <span class="muted">by natscoord-ui</span>`)
	m := resumeRev.FindStringSubmatch(body)
	require.NotNil(t, m, "the resume toggle carries the pause's revision")
	require.Equal(t, itoa(p.Rev), m[1])

	stale := url.Values{"do": {"resume"}, "key": {"mail"}, "rev": {itoa(p.Rev + 100)}, "csrf": form["csrf"]}
	resp = e.Post(t, stale, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "failed", "a resume at another revision is refused")

	resume := url.Values{"do": {"resume"}, "key": {"mail"}, "rev": {m[1]}, "csrf": form["csrf"]}
	resp = e.Post(t, resume, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.NotContains(t, resp.Header.Get("Location"), "failed")
	s.WaitFor(t, "event: pause", `"kind":"mail"`, `"paused":false`)
	final, err := e.Ledger.WaitFinal(natstest.Context(t, 20*time.Second), "m1")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusCompleted, final["m1"].Status)
	require.Contains(t, e.Page(t, "/"), `data-toggle="pause">Pause</button>`)
}

// A read-only dashboard shows a paused kind but offers no toggle, and
// refuses the action.
func TestOverviewPauseReadOnly(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "m1", Seq: 1, Kind: "mail", Task: []byte(`{}`)})
		_, err := e.Ledger.Store().(*kvledger.KVStore).PauseKind(natstest.Context(t, 5*time.Second), kvledger.Pause{Kind: "mail", Schedules: true})
		require.NoError(t, err)
	}, func(c *dashboard.Config) { c.ReadOnly = true })
	body := e.Page(t, "/")
	require.Contains(t, body, `<tr data-kind="mail" class="paused">`)
	require.Contains(t, body, "paused</b>, its schedules too")
	require.NotContains(t, body, "data-toggle=")
	resp := e.Post(t, url.Values{"do": {"resume"}, "key": {"mail"}, "rev": {"1"}}, nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}
