package dashtest

import (
	"context"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// Env is an embedded server with a ledger (publishing events), a lease
// manager and a dashboard served by httptest.
type Env struct {
	Node    *natstest.Node
	Ledger  *kvledger.Ledger
	Leases  *kvlease.Manager
	Handler *dashboard.Handler
	Server  *httptest.Server
	Base    string // Server.URL + the Config's Prefix
}

// LedgerBucket is the KV bucket of the test ledger.
const LedgerBucket = "natscoord_ledger"

// Holder is the holder name of Env.Leases.
const Holder = "holder-1"

// HoldCtx is the context tests acquire leases with: it never ends, so a
// lease ends by its test's action or by its manager's Close, never by a
// context cancelled at cleanup while the manager closes (kvlease's
// Manager.Close races with a release that starts at the same moment).
var HoldCtx = context.Background()

// NewLedger opens the test ledger (its bucket's stream is its event log).
func NewLedger(t testing.TB, n *natstest.Node) *kvledger.Ledger {
	t.Helper()
	ctx := natstest.Context(t, 10*time.Second)
	js := n.NewJS(t)
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: LedgerBucket})
	require.NoError(t, err)
	l, err := kvledger.New(store)
	require.NoError(t, err)
	return l
}

// NewEnv starts everything; setup runs before the dashboard starts (for
// state it must read at start), mod adjusts its Config. Either may be nil.
func NewEnv(t testing.TB, setup func(*Env), mod func(*dashboard.Config)) *Env {
	t.Helper()
	e := &Env{Node: natstest.WithServer(t)}
	e.Ledger = NewLedger(t, e.Node)
	ctx := natstest.Context(t, 10*time.Second)
	m, err := kvlease.NewManager(ctx, e.Node.NewJS(t), kvlease.Config{Holder: Holder})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	e.Leases = m
	if setup != nil {
		setup(e)
	}
	cfg := dashboard.Config{JS: e.Node.NewJS(t), Logger: slog.New(slog.NewTextHandler(tlogWriter{t}, nil))}
	if mod != nil {
		mod(&cfg)
	}
	// The set-up context ends as soon as New returns, as natscoord ui's
	// does: nothing the dashboard runs afterwards may depend on it.
	setupCtx, endSetup := context.WithTimeout(ctx, 10*time.Second)
	h, err := dashboard.New(setupCtx, cfg)
	endSetup()
	require.NoError(t, err)
	e.Handler = h
	var root http.Handler = h
	if cfg.Prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(cfg.Prefix+"/", h)
		root = mux
	}
	e.Server = httptest.NewServer(root)
	e.Base = e.Server.URL + cfg.Prefix
	t.Cleanup(func() {
		_ = h.Close()
		e.Server.Close()
	})
	return e
}

// Get fetches path (below Base) and returns the status and body.
func (e *Env) Get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := e.Server.Client().Get(e.Base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// Page fetches path, requires 200 and returns the body.
func (e *Env) Page(t testing.TB, path string) string {
	t.Helper()
	code, body := e.Get(t, path)
	require.Equal(t, http.StatusOK, code, "GET %s: %s", path, body)
	return body
}

// Post submits an action form with the extra headers hdr; it does not
// follow redirects. The body is closed by t.Cleanup.
func (e *Env) Post(t testing.TB, form url.Values, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.Base+"/act", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := *e.Server.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// CSRFOf reads the CSRF token from a confirmation page.
func CSRFOf(t testing.TB, body string) string {
	t.Helper()
	const marker = `name="csrf" value="`
	i := strings.Index(body, marker)
	require.GreaterOrEqual(t, i, 0, "no csrf field in %s", body)
	rest := body[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}

// BulkTasksOf returns the tasks a bulk dry run's confirm form carries,
// each "<revision>:<query-escaped key>" as the form posts it.
func BulkTasksOf(t testing.TB, body string) []string {
	t.Helper()
	var out []string
	for _, m := range bulkTaskField.FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

var bulkTaskField = regexp.MustCompile(`name="task" value="([^"]*)"`)

// tlogWriter sends the dashboard's log lines to t.Log.
type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
