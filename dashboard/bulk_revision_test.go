package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A confirmed action applies only to the tasks as the page showed them
// (issue 34, item 6): a failed task listed for rm, then reopened and
// completed before the confirm, is refused and named, and its new
// completed record (its result, its idempotency) stays; the other task
// listed is removed. Without the revision in the form, the confirm
// removed the new record.
func TestBulkActionBoundToTheRevisionsShown(t *testing.T) {
	e := operatorEnv(t, func(e *dashtest.Env) {
		for _, k := range []string{"job", "other"} {
			dashtest.Admit(t, e.Ledger, k, nil)
			dashtest.RunTask(t, e.Ledger, k, "w1", kvledger.StatusFailed)
		}
	}, nil)
	dry := e.Page(t, "/bulk?do=rm&keys="+url.QueryEscape("job\nother"))
	require.Contains(t, dry, "Each is changed only if it has not changed since this list was made")
	tasks := dashtest.BulkTasksOf(t, dry)
	require.Len(t, tasks, 2)

	ctx := natstest.Context(t, 10*time.Second)
	_, err := e.Ledger.Reopen(ctx, "someone", "job", time.Now())
	require.NoError(t, err)
	dashtest.RunTask(t, e.Ledger, "job", "w2", kvledger.StatusCompleted)

	resp := e.Post(t, url.Values{"do": {"rm"}, "bulk": {"1"}, "task": tasks, "csrf": {dashtest.CSRFOf(t, dry)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc, err := url.QueryUnescape(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Contains(t, loc, "failed: rm: 1 of 2 task(s) done")
	require.Contains(t, loc, "job: kvledger: record changed since it was read")
	st, found, err := e.Ledger.State(ctx, "job")
	require.NoError(t, err)
	require.True(t, found, "the record written after the listing stays")
	require.Equal(t, kvledger.StatusCompleted, st.Status)
	_, found, err = e.Ledger.State(ctx, "other")
	require.NoError(t, err)
	require.False(t, found, "the task that did not move is removed")

	// A form without revisions (a page from before) is refused whole.
	resp = e.Post(t, url.Values{"do": {"rm"}, "bulk": {"1"}, "key": {"job"}, "csrf": {dashtest.CSRFOf(t, dry)}}, nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// The one-task confirm page is bound the same way: its form carries the
// revision its question shows.
func TestConfirmPageBoundToTheRevisionShown(t *testing.T) {
	e := operatorEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "job", nil)
		dashtest.RunTask(t, e.Ledger, "job", "w1", kvledger.StatusFailed)
	}, nil)
	page := e.Page(t, "/confirm?do=rm&key=job")
	require.Contains(t, page, "It is failed now.")
	m := regexp.MustCompile(`name="rev" value="(\d+)"`).FindStringSubmatch(page)
	require.NotNil(t, m, page)

	ctx := natstest.Context(t, 10*time.Second)
	_, err := e.Ledger.Reopen(ctx, "someone", "job", time.Now())
	require.NoError(t, err)
	dashtest.RunTask(t, e.Ledger, "job", "w2", kvledger.StatusCompleted)

	resp := e.Post(t, url.Values{"do": {"rm"}, "key": {"job"}, "rev": {m[1]}, "csrf": {dashtest.CSRFOf(t, page)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "failed")
	st, found, err := e.Ledger.State(ctx, "job")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, kvledger.StatusCompleted, st.Status)
}

// A bulk rm keeps a completed task that a pending task needs (issue 34,
// item 4): it is refused, naming the task that needs it, as `ledger rm`
// does; without the rule the need was removed and its dependent never ran.
func TestBulkRemoveKeepsWhatATaskNeeds(t *testing.T) {
	e := operatorEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "a", nil)
		dashtest.Admit(t, e.Ledger, "b", nil, "a")
		dashtest.RunTask(t, e.Ledger, "a", "w1", kvledger.StatusCompleted)
	}, nil)
	dry := e.Page(t, "/bulk?do=rm&status=completed")
	require.Contains(t, dry, "kept: needed by b, not ended yet", "the dry run says so")
	require.Contains(t, dry, "Nothing would change.")
	// A form made before b was admitted (or by hand) is refused by the
	// ledger itself.
	dry = e.Page(t, "/confirm?do=rm&key=a") // for its CSRF token
	tasks := []string{fmt.Sprintf("%d:a", revOf(t, e, "a"))}
	resp := e.Post(t, url.Values{"do": {"rm"}, "bulk": {"1"}, "task": tasks, "csrf": {dashtest.CSRFOf(t, dry)}}, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc, err := url.QueryUnescape(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Contains(t, loc, `a: kvledger: record is needed by tasks that have not ended: "a" is needed by "b"`)
	_, found, err := e.Ledger.State(natstest.Context(t, 10*time.Second), "a")
	require.NoError(t, err)
	require.True(t, found, "a is kept")
}

// revOf is key's revision in the ledger.
func revOf(t *testing.T, e *dashtest.Env, key kvledger.IdempotencyKey) uint64 {
	t.Helper()
	st, found, err := e.Ledger.State(natstest.Context(t, 10*time.Second), key)
	require.NoError(t, err)
	require.True(t, found, key)
	return st.Rev
}
