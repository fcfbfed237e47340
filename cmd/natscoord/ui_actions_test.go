package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestUITaskActionsWired runs reopen and cancel through the dashboard on
// the ledger's own operator methods; each write shows once in the task's
// timeline (issue 22: a reopen and a cancel each showed twice when their
// events were published beside the writes).
func TestUITaskActionsWired(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "a", nil)
		dashtest.Admit(t, e.Ledger, "b", nil, "a")
	}, func(c *dashboard.Config) {
		c.Tasks = uiTaskActions(c.JS, dashtest.LedgerBucket)
	})
	act := func(do, key string) {
		tok := dashtest.CSRFOf(t, e.Page(t, "/confirm?do="+do+"&key="+key))
		r := e.Post(t, url.Values{"do": {do}, "key": {key}, "csrf": {tok}}, nil)
		require.Equal(t, http.StatusSeeOther, r.StatusCode)
		require.NotContains(t, r.Header.Get("Location"), "failed", r.Header.Get("Location"))
	}
	require.Contains(t, e.Page(t, "/task?key=a"), "Cancel…")
	act("cancel", "a")
	body := e.Page(t, "/task?key=a")
	require.Contains(t, body, "ledger.cancelled")
	require.Contains(t, body, "Reopen…")
	act("reopen", "a")
	require.Eventually(t, func() bool {
		b := e.Page(t, "/task?key=b")
		return strings.Contains(b, "ledger.unblocked") && strings.Contains(b, `data-field="status">pending<`)
	}, 10*time.Second, 100*time.Millisecond)
	body = e.Page(t, "/task?key=a")
	require.Contains(t, body, "ledger.reopened")
	require.Contains(t, body, "<b>ui.reopen</b>")
	for _, ev := range []string{"ledger.admitted", "ledger.cancelled", "ledger.reopened"} {
		require.Equal(t, 1, strings.Count(body, "<b>"+ev+"</b>"), "%s once in the timeline", ev)
	}
}

// TestUITaskActionsRemove: natscoord ui offers rm (single and bulk) on
// ended tasks, through the ledger's Delete.
func TestUITaskActionsRemove(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "a", nil)
		dashtest.RunTask(t, e.Ledger, "a", "w1", kvledger.StatusCompleted)
	}, func(c *dashboard.Config) {
		c.Tasks = uiTaskActions(c.JS, dashtest.LedgerBucket)
	})
	require.Contains(t, e.Page(t, "/task?key=a"), "Remove…")
	dry := e.Page(t, "/bulk?do=rm&keys=a")
	require.Contains(t, dry, "would rm")
	r := e.Post(t, url.Values{"do": {"rm"}, "bulk": {"1"}, "task": dashtest.BulkTasksOf(t, dry), "csrf": {dashtest.CSRFOf(t, dry)}}, nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	require.NotContains(t, r.Header.Get("Location"), "failed", r.Header.Get("Location"))
	_, found, err := e.Ledger.State(natstest.Context(t, 5*time.Second), "a")
	require.NoError(t, err)
	require.False(t, found, "removed")
}

// The ui's task actions, closed (natscoord ui's stop, once its server
// has shut down), close the ledger store their first action opened; an
// action after that is refused, and opens no store again.
func TestUITaskActionsCloseTheirStore(t *testing.T) {
	var acts *operatorActions
	dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "a", nil)
		dashtest.RunTask(t, e.Ledger, "a", "w1", kvledger.StatusFailed)
	}, func(c *dashboard.Config) {
		acts = uiTaskActions(c.JS, dashtest.LedgerBucket)
		c.Tasks = acts
	})
	ctx := natstest.Context(t, 10*time.Second)
	require.NoError(t, acts.Reopen(ctx, "ui", "a", 0))
	store, ok := acts.l.Store().(*kvledger.KVStore)
	require.True(t, ok)

	acts.close()
	rec := kvledger.TaskState{Key: "after-close", Status: kvledger.StatusPending, Sequence: 1, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	_, _, _, _, err := store.Insert(ctx, rec.Key, rec)
	require.ErrorIs(t, err, kvledger.ErrClosed, "the store is closed")
	require.ErrorIs(t, acts.Cancel(ctx, "ui", "a", 0), kvledger.ErrClosed)
	acts.close() // idempotent
}
