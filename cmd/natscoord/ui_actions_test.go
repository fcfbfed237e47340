package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestUITaskActionsWired runs reopen and cancel through the dashboard on
// the ledger's own operator methods.
func TestUITaskActionsWired(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	store, err := kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: "natscoord_ledger"})
	require.NoError(t, err)
	bus, err := events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{})
	require.NoError(t, err)
	l, err := kvledger.New(store, bus)
	require.NoError(t, err)
	_, err = l.Admit(ctx, "t", "a", 1, nil, time.Now())
	require.NoError(t, err)
	_, err = l.Admit(ctx, "t", "b", 1, nil, time.Now(), "a")
	require.NoError(t, err)
	h, err := dashboard.New(ctx, dashboard.Config{JS: n.JS, Tasks: uiTaskActions(n.JS, "natscoord_ledger", events.JetStreamBusConfig{}), Create: true})
	require.NoError(t, err)
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := *srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(p string) string {
		r, err := c.Get(srv.URL + p)
		require.NoError(t, err)
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		return string(b)
	}
	act := func(do, key string) {
		page := get("/confirm?do=" + do + "&key=" + key)
		i := strings.Index(page, `name="csrf" value="`)
		require.GreaterOrEqual(t, i, 0, page)
		tok := page[i+19 : i+19+64]
		r, err := c.PostForm(srv.URL+"/act", url.Values{"do": {do}, "key": {key}, "csrf": {tok}})
		require.NoError(t, err)
		r.Body.Close()
		require.Equal(t, 303, r.StatusCode)
		require.NotContains(t, r.Header.Get("Location"), "failed", r.Header.Get("Location"))
	}
	require.Contains(t, get("/task?key=a"), "Cancel…")
	act("cancel", "a")
	body := get("/task?key=a")
	require.Contains(t, body, "ledger.cancelled")
	require.Contains(t, body, "Reopen…")
	act("reopen", "a")
	require.Eventually(t, func() bool {
		b := get("/task?key=b")
		return strings.Contains(b, "ledger.unblocked") && strings.Contains(b, `data-field="status">pending<`)
	}, 10*time.Second, 100*time.Millisecond)
	body = get("/task?key=a")
	require.Contains(t, body, "ledger.reopened")
	require.Contains(t, body, "<b>ui.reopen</b>")
}
