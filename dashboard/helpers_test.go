package dashboard_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// env is an embedded server with a ledger (publishing events), a lease
// manager and a dashboard served by httptest.
type env struct {
	node   *natstest.Node
	ledger *kvledger.Ledger
	leases *kvlease.Manager
	h      *dashboard.Handler
	srv    *httptest.Server
	base   string // srv.URL + prefix
}

const ledgerBucket = "natscoord_ledger"

// newLedger opens the test ledger with a JetStream bus.
func newLedger(t testing.TB, n *natstest.Node) *kvledger.Ledger {
	t.Helper()
	ctx := natstest.Context(t, 10*time.Second)
	js := n.NewJS(t)
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: ledgerBucket})
	require.NoError(t, err)
	bus, err := events.NewJetStreamBus(ctx, js, events.JetStreamBusConfig{})
	require.NoError(t, err)
	l, err := kvledger.New(store, bus)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}

// newEnv starts everything; setup runs before the dashboard starts (for
// state it must read at start), mod adjusts its Config.
func newEnv(t testing.TB, setup func(*env), mod func(*dashboard.Config)) *env {
	t.Helper()
	e := &env{node: natstest.WithServer(t)}
	e.ledger = newLedger(t, e.node)
	ctx := natstest.Context(t, 10*time.Second)
	m, err := kvlease.NewManager(ctx, e.node.NewJS(t), kvlease.Config{Holder: "holder-1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	e.leases = m
	if setup != nil {
		setup(e)
	}
	cfg := dashboard.Config{JS: e.node.NewJS(t), Logger: slog.New(slog.NewTextHandler(tlogWriter{t}, nil))}
	if mod != nil {
		mod(&cfg)
	}
	h, err := dashboard.New(ctx, cfg)
	require.NoError(t, err)
	e.h = h
	var root http.Handler = h
	if cfg.Prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(cfg.Prefix+"/", h)
		root = mux
	}
	e.srv = httptest.NewServer(root)
	e.base = e.srv.URL + cfg.Prefix
	t.Cleanup(func() {
		_ = h.Close()
		e.srv.Close()
	})
	return e
}

// get fetches path and returns the status and body.
func (e *env) get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := e.srv.Client().Get(e.base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// page fetches path, requires 200 and returns the body.
func (e *env) page(t testing.TB, path string) string {
	t.Helper()
	code, body := e.get(t, path)
	require.Equal(t, http.StatusOK, code, "GET %s: %s", path, body)
	return body
}

// post submits an action form; it does not follow redirects.
func (e *env) post(t testing.TB, form url.Values, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+"/act", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := *e.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// csrfOf reads the CSRF token from a confirmation page.
func csrfOf(t testing.TB, body string) string {
	t.Helper()
	const marker = `name="csrf" value="`
	i := strings.Index(body, marker)
	require.GreaterOrEqual(t, i, 0, "no csrf field in %s", body)
	rest := body[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}

// sseStream is an open /sse response read line by line.
type sseStream struct {
	lines chan string
}

func (e *env) openSSE(t testing.TB) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/sse", nil)
	require.NoError(t, err)
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &sseStream{lines: make(chan string, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
	})
	s.waitFor(t, "event: hello")
	return s
}

// waitFor returns the line after the first line containing want (the data
// line of an event), failing after a bound.
func (s *sseStream) waitFor(t testing.TB, want string, alsoData ...string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l := <-s.lines:
			if os.Getenv("SSE_DEBUG") != "" {
				t.Log("sse:", l)
			}
			if !strings.Contains(l, want) {
				continue
			}
			data := natstest.Recv(t, s.lines, 5*time.Second, "data line")
			ok := true
			for _, d := range alsoData {
				ok = ok && strings.Contains(data, d)
			}
			if ok {
				return data
			}
		case <-timeout:
			t.Fatalf("no %q with %q on the event stream", want, alsoData)
			return ""
		}
	}
}

// admit admits key with needs, failing the test on error.
func admit(t testing.TB, l *kvledger.Ledger, key string, task any, needs ...string) {
	t.Helper()
	ns := make([]kvledger.IdempotencyKey, len(needs))
	for i, n := range needs {
		ns[i] = kvledger.IdempotencyKey(n)
	}
	ok, err := l.Admit(natstest.Context(t, 5*time.Second), "test", kvledger.IdempotencyKey(key), 1, task, time.Now(), ns...)
	require.NoError(t, err)
	require.True(t, ok)
}

// run claims and completes key with status.
func run(t testing.TB, l *kvledger.Ledger, key, owner string, status kvledger.Status) {
	t.Helper()
	ctx := natstest.Context(t, 5*time.Second)
	k := kvledger.IdempotencyKey(key)
	f, err := l.Claim(ctx, "test", k, kvledger.OwnerID(owner), time.Minute, time.Now())
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "test", k, kvledger.OwnerID(owner), f, status, time.Now()))
}

// buildGraph admits a small pipeline: fetch → compile → test → package,
// with lint beside compile; package needs test and lint.
func buildGraph(t testing.TB, l *kvledger.Ledger) {
	t.Helper()
	admit(t, l, "fetch", map[string]any{"kind": "io"})
	admit(t, l, "compile", map[string]any{"kind": "build"}, "fetch")
	admit(t, l, "lint", map[string]any{"kind": "check"}, "fetch")
	admit(t, l, "test", map[string]any{"kind": "check"}, "compile")
	admit(t, l, "package", map[string]any{"kind": "build"}, "test", "lint")
}

// tlogWriter sends the dashboard's log lines to t.Log.
type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// waitAll waits until, for each matcher (an event line and data
// substrings), a matching event arrived, in any order.
func (s *sseStream) waitAll(t testing.TB, matchers ...[]string) {
	t.Helper()
	left := slices.Clone(matchers)
	timeout := time.After(10 * time.Second)
	var ev string
	for len(left) > 0 {
		select {
		case l := <-s.lines:
			if strings.HasPrefix(l, "event: ") {
				ev = l
				continue
			}
			left = slices.DeleteFunc(left, func(m []string) bool {
				if !strings.Contains(ev, m[0]) {
					return false
				}
				for _, d := range m[1:] {
					if !strings.Contains(l, d) {
						return false
					}
				}
				return true
			})
		case <-timeout:
			t.Fatalf("events not seen: %q", left)
		}
	}
}

// holdCtx is the context tests acquire leases with: it never ends, so a
// lease ends by its test's action or by its manager's Close, never by a
// context cancelled at cleanup while the manager closes (kvlease's
// Manager.Close races with a release that starts at the same moment).
var holdCtx = context.Background()
