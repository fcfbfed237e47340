package dashboard

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// Handler is the dashboard. It is an http.Handler serving its pages, the
// /sse stream, the action endpoints and /metrics under Config.Prefix.
// Close stops its consumers and ends open event streams.
type Handler struct {
	cfg       Config
	ledger    *kvledger.Ledger
	store     *kvledger.KVStore
	tasks     *taskView
	schedules storedSchedules
	pauses    pausedKinds
	// feed is the record watch's keeper (ledger_feed.go). The handler
	// never reads it: its goroutine (recordFeed.keep) owns it. It is kept
	// only as the tests' hook to stop the watch (export_test.go,
	// RewatchRecords).
	feed      *recordFeed
	leases    []*leaseView
	broker    *broker
	recent    *ring[events.Event]
	leaseLog  *ring[leaseChange]
	actionLog *ring[actionRecord]
	metrics   *metrics
	conn      connState
	streams   atomic.Int64 // open /sse streams
	csrf      string
	cop       *http.CrossOriginProtection
	pages     *pages
	root      http.Handler
	started   time.Time

	// finishes and backlog are the overview charts' numbers (charts.go):
	// the event feed counts the finishes, chartClock samples the backlog.
	finishes   finishes
	backlog    backlogs
	chartClock chartClock
	// eventsCaughtUp is closed once the event feed delivered what the
	// stream held when it started (the charts' hour included).
	eventsCaughtUp chan struct{}

	mgrMu    sync.Mutex
	managers map[string]*kvlease.Manager

	// life is the handler's own context: watches and goroutines that
	// run until Close use it, never the set-up context New was given.
	life      context.Context
	endLife   context.CancelFunc
	stops     []func()
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New binds the ledger (its bucket's stream is the event log) and the lease buckets named by
// cfg, reads their current state and starts following them. ctx bounds
// the set-up only.
func New(ctx context.Context, cfg Config) (*Handler, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Handler{
		cfg:       cfg,
		tasks:     newTaskView(cfg.Clock),
		broker:    newBroker(),
		recent:    newRing[events.Event](recentEvents),
		leaseLog:  newRing[leaseChange](100),
		actionLog: newRing[actionRecord](200),
		csrf:      newCSRFToken(),
		cop:       http.NewCrossOriginProtection(),
		managers:  make(map[string]*kvlease.Manager),
		started:   cfg.Clock.Now(),
	}
	h.life, h.endLife = context.WithCancel(context.Background())
	h.stops = append(h.stops, h.endLife)
	h.metrics = newMetrics()
	if h.pages, err = parsePages(cfg.Prefix, cfg.Clock); err != nil {
		return nil, err
	}
	fail := func(err error) (*Handler, error) {
		_ = h.Close()
		return nil, err
	}
	h.startConnWatch()
	if err := h.openLedger(ctx); err != nil {
		return fail(err)
	}
	if err := h.openLeases(ctx); err != nil {
		return fail(err)
	}
	if err := h.startRecordFeed(ctx); err != nil {
		return fail(err)
	}
	if err := h.startEventFeed(ctx); err != nil {
		return fail(err)
	}
	if err := h.startLeaseWatches(ctx); err != nil {
		return fail(err)
	}
	h.wg.Go(h.runAtClock)
	h.startChartClock()
	h.root = h.routes()
	return h, nil
}

func (h *Handler) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.overviewPage)
	mux.HandleFunc("GET /fragment/overview", h.overviewFragment)
	mux.HandleFunc("GET /tasks", h.tasksPage)
	mux.HandleFunc("GET /task", h.taskPage)
	mux.HandleFunc("GET /fragment/task", h.taskFragment)
	mux.HandleFunc("GET /bulk", h.bulkPage)
	mux.HandleFunc("GET /workers", h.workersPage)
	mux.HandleFunc("GET /fragment/workers", h.workersFragment)
	mux.HandleFunc("GET /graph", h.graphPage)
	mux.HandleFunc("GET /graph.svg", h.graphSVG)
	mux.HandleFunc("GET /coord", h.coordPage)
	mux.HandleFunc("GET /fragment/coord", h.coordFragment)
	mux.HandleFunc("GET /events", h.eventsPage)
	mux.HandleFunc("GET /sse", h.sse)
	mux.HandleFunc("GET /confirm", h.confirmPage)
	mux.HandleFunc("/act", h.actPost)
	mux.Handle("GET /static/", http.FileServerFS(staticFS))
	mux.HandleFunc("GET /metrics", h.serveMetrics)
	var root http.Handler = mux
	if h.cfg.Prefix != "" {
		root = http.StripPrefix(h.cfg.Prefix, mux)
	}
	return h.authenticate(securityHeaders(root))
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.root.ServeHTTP(w, r) }

// Watched is closed when the first browser opens the live stream: a
// command that wants its audience before it starts can wait on it.
func (h *Handler) Watched() <-chan struct{} { return h.broker.watched }

// Close stops the consumers and watches, ends the open event streams and
// closes the managers made for force releases. It is idempotent.
func (h *Handler) Close() error {
	h.closeOnce.Do(func() {
		for _, stop := range h.stops {
			stop()
		}
		h.wg.Wait()
		h.broker.close()
		h.mgrMu.Lock()
		defer h.mgrMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), h.cfg.OpTimeout)
		defer cancel()
		for _, m := range h.managers {
			_ = m.Close(ctx)
		}
		if h.store != nil {
			h.store.Close() // a closed dashboard writes nothing more
		}
	})
	return nil
}

// securityHeaders forbids framing and inline script from elsewhere.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}
