package dashboard

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
)

type phaseCount struct {
	Phase kvledger.Phase
	N     int
}

type leaseCounts struct {
	Bucket                                   string
	Absent                                   bool
	Lease, Lock, Semaphore, Election, Waiter int
}

type overviewData struct {
	common
	Counts         []phaseCount
	Total          int
	OldestReady    *taskSummary
	Done1m, Done5m int
	Rate1m         string
	Leases         []leaseCounts
	Recent         []events.Event
	// Unserved and Unknown: as on the workers page (Handler.unserved).
	Unserved []kindAlert
	Unknown  int
	Charts   chartsData
	// Kinds are the kinds with tasks or paused, each with its pause
	// toggle (a POST bound to the pause's revision shown); CSRF is the
	// toggle forms' token.
	Kinds []kindRow
	CSRF  string
}

func (h *Handler) overview(r *http.Request) overviewData {
	d := overviewData{common: h.common(r, "Overview", "overview")}
	now := h.cfg.Clock.Now()
	counts, total := h.tasks.phaseCounts(now)
	for _, p := range kvledger.Phases {
		d.Counts = append(d.Counts, phaseCount{p, counts[p]})
	}
	d.Total = total
	if s, ok := h.tasks.oldestReady(now); ok {
		d.OldestReady = &s
	}
	d.Done1m, d.Done5m = h.finishes.count(now, time.Minute), h.finishes.count(now, 5*time.Minute)
	d.Rate1m = strconv.FormatFloat(float64(d.Done1m)/60, 'f', 2, 64)
	for _, v := range h.leases {
		c := v.kindCounts()
		d.Leases = append(d.Leases, leaseCounts{v.bucket, v.absent.Load(), c[kindLease], c[kindLock], c[kindSemaphore], c[kindElection], c[kindWaiter]})
	}
	d.Recent = h.recent.newest(10)
	d.Unserved, d.Unknown = h.unserved(now)
	d.Charts = h.charts()
	d.Kinds, d.CSRF = h.kindRows(h.tasks.phases.Counts(now).ByKind), h.csrf
	return d
}

func (h *Handler) overviewPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, "overview", "base", http.StatusOK, h.overview(r))
}

func (h *Handler) overviewFragment(w http.ResponseWriter, r *http.Request) {
	h.render(w, "overview", "overviewBody", http.StatusOK, h.overview(r))
}

type tasksData struct {
	common
	Filter            taskFilter
	Phases            []kvledger.Phase
	Page              taskPage
	Now               time.Time
	Cursor            uint64
	NextURL, FirstURL string
	BulkURL           string // the bulk form for this filter, when task actions are offered
	Total             int
}

func (h *Handler) tasksPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := h.filterOf(q)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	d := tasksData{common: h.common(r, "Tasks", "tasks"), Filter: f, Phases: kvledger.Phases, Now: f.Now, Cursor: atoiDefault(q.Get("before"), 0)}
	d.Page = h.tasks.page(f, d.Cursor, h.cfg.PageSize)
	d.Total = h.tasks.size()
	link := url.Values{}
	for k, v := range map[string]string{"status": string(f.Phase), "kind": f.Kind, "prefix": f.Prefix} {
		if v != "" {
			link.Set(k, v)
		}
	}
	d.FirstURL = h.cfg.Prefix + "/tasks?" + link.Encode()
	if len(h.taskActions()) > 0 {
		d.BulkURL = h.cfg.Prefix + "/bulk?" + link.Encode()
	}
	if d.Page.Next > 0 {
		link.Set("before", strconv.FormatUint(d.Page.Next, 10))
		d.NextURL = h.cfg.Prefix + "/tasks?" + link.Encode()
	}
	h.render(w, "tasks", "base", http.StatusOK, d)
}

// filterOf reads a task filter from a query: status (a phase name, as
// kvledger.ParsePhase reads it), kind and prefix.
func (h *Handler) filterOf(q url.Values) (taskFilter, error) {
	f := taskFilter{Kind: q.Get("kind"), Prefix: q.Get("prefix"), Now: h.cfg.Clock.Now()}
	if s := q.Get("status"); s != "" {
		p, err := kvledger.ParsePhase(s)
		if err != nil {
			return f, fmt.Errorf("unknown status: %w", err) // it names the phases
		}
		f.Phase = p
	}
	return f, nil
}

type taskData struct {
	common
	Task                                taskSummary
	Phase                               kvledger.Phase
	Dependents                          []kvledger.IdempotencyKey
	Timeline                            []timelineEntry
	Truncated                           bool
	CanReopen, CanCancel, NoTaskActions bool
	CanRemove                           bool
	CanRunNow                           bool
	// Claim is the claim's lease as the server holds it, for a claimed
	// record that names one (claimLease); zero otherwise, when the page
	// shows the record's LeaseUntil (a reference claim's own expiry).
	Claim claimLease
	// Attempts are the task's attempts, oldest first, read by kvledger's
	// rule (kvledger.AttemptsOf) from the writes the ledger bucket keeps of
	// the record, the timeline's events (Ledger.KeyEvents, its last 64; a
	// bucket of the older one-write layout keeps only the last, and then
	// only the attempt it ended is shown).
	Attempts []kvledger.Attempt
	// LastError is the record's last error (read from the store, not
	// kept in the view: errors can be long).
	LastError string
	// Args and Result are the task's payload and result (payloadView:
	// pretty-printed, bounded), HasArgs and HasResult whether the record
	// holds them; all zero when PayloadsHidden (Config.HidePayloads).
	Args, Result       payloadView
	HasArgs, HasResult bool
	PayloadsHidden     bool
	// Finished is the time of the write that ended the task (zero while
	// it has not ended).
	Finished time.Time
}

// task reads one record (from the store, so the page is as new as the
// leader) and its timeline.
func (h *Handler) task(w http.ResponseWriter, r *http.Request) (taskData, bool) {
	key, ok := keyParam(r, "key")
	if !ok {
		h.fail(w, r, http.StatusBadRequest, "no key given")
		return taskData{}, false
	}
	if !h.natsUp() {
		h.fail(w, r, http.StatusServiceUnavailable, unreachable)
		return taskData{}, false
	}
	ctx, cancel := h.cfg.opCtx(r.Context())
	defer cancel()
	s, found, err := h.ledger.State(ctx, key)
	if err != nil {
		// The error chain is for the operator's log, not for the page.
		h.cfg.Logger.Warn("dashboard: read record", "key", string(key), "err", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The record could not be read from NATS in time; try again (the dashboard's log has the cause).")
		return taskData{}, false
	}
	if !found {
		h.fail(w, r, http.StatusNotFound, "no record for key "+displayKey(string(key)))
		return taskData{}, false
	}
	d := taskData{common: h.common(r, "Task "+displayKey(string(key)), "tasks"), Task: summarize(s, h.cfg.KindOf(s)),
		Dependents: h.tasks.dependentsOf(key)}
	d.Timeline, d.Attempts, d.Truncated, err = h.timeline(ctx, d.Task)
	if err != nil {
		h.cfg.Logger.Warn("dashboard: timeline", "key", string(key), "err", err)
	}
	d.LastError = errText(s.LastError)
	d.Claim = h.claimLeaseOf(s)
	if d.PayloadsHidden = h.cfg.HidePayloads; !d.PayloadsHidden {
		d.Args, d.HasArgs = argsView(s.Task)
		if d.HasResult = len(s.Result) > 0; d.HasResult {
			d.Result = rawView(s.Result)
		}
	}
	d.Phase = d.Task.Phase(h.cfg.Clock.Now())
	if d.Phase.Final() {
		d.Finished = s.UpdatedAt
	}
	d.CanReopen = h.offered(actReopen) && d.Phase.Reopenable()
	d.CanCancel = h.offered(actCancel) && d.Phase.Cancellable()
	d.CanRunNow = h.offered(actRunNow) && d.Phase.Delayed()
	d.CanRemove = h.offered(actRemove) && d.Phase.Final()
	d.NoTaskActions = !h.cfg.ReadOnly && h.cfg.Tasks == nil
	return d, true
}

func (h *Handler) taskPage(w http.ResponseWriter, r *http.Request) {
	if d, ok := h.task(w, r); ok {
		h.render(w, "task", "base", http.StatusOK, d)
	}
}

// taskFragment is the task page's body: its facts, controls and
// timeline, reloaded on every write of the record, so the controls
// offered always match the state shown.
func (h *Handler) taskFragment(w http.ResponseWriter, r *http.Request) {
	if d, ok := h.task(w, r); ok {
		h.render(w, "task", "taskBody", http.StatusOK, d)
	}
}

type graphData struct {
	common
	Key       kvledger.IdempotencyKey
	SVG       template.HTML
	Truncated bool
	Max       int
}

func (h *Handler) graphFor(w http.ResponseWriter, r *http.Request) (graph, kvledger.IdempotencyKey, bool) {
	key, ok := keyParam(r, "key")
	if !ok {
		h.fail(w, r, http.StatusBadRequest, "no key given")
		return graph{}, "", false
	}
	if _, ok := h.tasks.get(key); !ok {
		h.fail(w, r, http.StatusNotFound, "no record for key "+displayKey(string(key)))
		return graph{}, "", false
	}
	return h.buildGraph(key), key, true
}

func (h *Handler) graphPage(w http.ResponseWriter, r *http.Request) {
	g, key, ok := h.graphFor(w, r)
	if !ok {
		return
	}
	// The SVG is built by graph.svg, which escapes every text it writes.
	svg := template.HTML(g.svg(h.cfg.Prefix + "/task?key="))
	if r.URL.Query().Get("svg") == "inline" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(svg))
		return
	}
	h.render(w, "graph", "base", http.StatusOK, graphData{common: h.common(r, "Graph", "tasks"), Key: key, SVG: svg,
		Truncated: g.Truncated, Max: maxGraphNodes})
}

// graphSVG serves the graph as an image, for embedding elsewhere.
func (h *Handler) graphSVG(w http.ResponseWriter, r *http.Request) {
	g, _, ok := h.graphFor(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<?xml-stylesheet type="text/css" href="` + esc(h.cfg.Prefix) + `/static/style.css"?>` + "\n" +
		g.svg(h.cfg.Prefix+"/task?key=")))
}

type leaseGroup struct {
	Kind            leaseKind
	Title           string
	NameCol, ResCol string
	Rows            []leaseRow
}

type coordData struct {
	common
	Absent     []string // lease buckets that do not exist yet
	Groups     []leaseGroup
	Changes    []leaseChange
	Actions    []actionRecord
	CanRelease bool
}

func (h *Handler) coord(r *http.Request) coordData {
	d := coordData{common: h.common(r, "Leases & locks", "coord"), CanRelease: h.offered(actRelease)}
	for _, v := range h.leases {
		if v.absent.Load() {
			d.Absent = append(d.Absent, v.bucket)
		}
	}
	for _, g := range []leaseGroup{
		{Kind: kindLease, Title: "Leases", NameCol: "family", ResCol: "key"},
		{Kind: kindLock, Title: "Locks", NameCol: "locker", ResCol: "lock key"},
		{Kind: kindSemaphore, Title: "Semaphore slots", NameCol: "family", ResCol: "key"},
		{Kind: kindElection, Title: "Election leaders", NameCol: "locker", ResCol: "election"},
		{Kind: kindWaiter, Title: "Fair-mode waiters", NameCol: "locker", ResCol: "queue entry"},
	} {
		for _, v := range h.leases {
			g.Rows = append(g.Rows, v.list(g.Kind)...)
		}
		d.Groups = append(d.Groups, g)
	}
	d.Changes, d.Actions = h.leaseLog.newest(20), h.actionLog.newest(20)
	return d
}

func (h *Handler) coordPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, "coord", "base", http.StatusOK, h.coord(r))
}

func (h *Handler) coordFragment(w http.ResponseWriter, r *http.Request) {
	h.render(w, "coord", "coordBody", http.StatusOK, h.coord(r))
}

func (h *Handler) eventsPage(w http.ResponseWriter, r *http.Request) {
	rev := h.recent.newest(0)
	h.render(w, "events", "base", http.StatusOK, struct {
		common
		Recent []events.Event
	}{h.common(r, "Events", "events"), rev})
}
