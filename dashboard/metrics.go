package dashboard

import (
	"math"
	"net/http"
	"sync/atomic"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/opstats"
)

// metrics are the dashboard's Prometheus series, produced by opstats as
// every series of natscoord is, and kept per handler (so two handlers in
// one process never mix their counts). Gauges that describe current
// state are read from the views at scrape time; counters count what the
// dashboard's consumers saw since it started.
type metrics struct {
	events     *opstats.CounterVec // ledger events by name (renewals, takeovers, ...)
	leaseEnds  *opstats.CounterVec // lease ends by how: released, expired
	leaseRenew *opstats.CounterVec
	eventLag   gauge
	pending    gauge
	actions    *opstats.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		events: opstats.NewCounterVec("natscoord_ledger_events_total",
			"Ledger events seen on the event stream, by name and the record's status after the write (ledger.renewed counts renewals, ledger.taken_over takeovers, ledger.completed with status failed failed completions).", "event", "status"),
		leaseEnds: opstats.NewCounterVec("natscoord_lease_ends_total",
			"Leases that ended, by how: released (a delete: the holder or a force release) or expired (the server's TTL: the holder lost it).", "kind", "how"),
		leaseRenew: opstats.NewCounterVec("natscoord_lease_renewals_total",
			"Lease writes by the same owner seen on the lease buckets (renewals)."),
		actions: opstats.NewCounterVec("natscoord_ui_actions_total", "Dashboard actions, by action and result.", "action", "result"),
	}
}

// gauge is a float64 set by one writer and read at scrape time.
type gauge struct{ bits atomic.Uint64 }

func (g *gauge) Set(v float64)  { g.bits.Store(math.Float64bits(v)) }
func (g *gauge) value() float64 { return math.Float64frombits(g.bits.Load()) }

// serveMetrics writes every series in the Prometheus text format: the
// dashboard's and the Go runtime's.
func (h *Handler) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", opstats.TextContentType)
	_ = opstats.WriteText(w, append(h.Families(), opstats.RuntimeFamilies()...)...)
}

// Families returns the dashboard's series as /metrics serves them, read
// now (its counters and the views' current counts), without the Go
// runtime's: for a program that serves the Handler and gathers metrics
// its own way (opstats/promcollector.New(h.Families)).
func (h *Handler) Families() []opstats.Family {
	m := h.metrics
	fams := []opstats.Family{
		{Name: "natscoord_events_lag_seconds", Help: "Time from the writer's timestamp of the last event to the dashboard receiving it.",
			Kind: opstats.Gauge, Samples: []opstats.Sample{{Value: m.eventLag.value()}}},
		{Name: "natscoord_events_pending", Help: "Events on the stream not yet delivered to the dashboard's consumer.",
			Kind: opstats.Gauge, Samples: []opstats.Sample{{Value: m.pending.value()}}},
		m.events.Family(), m.leaseEnds.Family(), m.leaseRenew.Family(), m.actions.Family(),
	}

	counts, _ := h.tasks.statusCounts()
	tasks := opstats.Family{Name: "natscoord_ledger_tasks", Help: "Records of the ledger by status.", Kind: opstats.Gauge}
	for _, s := range kvledger.Statuses {
		tasks.Samples = append(tasks.Samples, opstats.Sample{Labels: []opstats.Label{{Name: "status", Value: string(s)}}, Value: float64(counts[s])})
	}
	claims := opstats.Family{Name: "natscoord_ledger_claims_in_flight", Help: "Records claimed now.", Kind: opstats.Gauge,
		Samples: []opstats.Sample{{Value: float64(counts[kvledger.StatusClaimed])}}}
	phases := opstats.Family{Name: "natscoord_ledger_task_phases", Kind: opstats.Gauge,
		Help: "Records of the ledger by phase (kvledger.Phase: pending, scheduled, retrying, running, cancelling, completed, failed, cancelled, blocked)."}
	byPhase, _ := h.tasks.phaseCounts(h.cfg.Clock.Now())
	for _, p := range kvledger.Phases {
		phases.Samples = append(phases.Samples, opstats.Sample{Labels: []opstats.Label{{Name: "phase", Value: string(p)}}, Value: float64(byPhase[p])})
	}
	held := opstats.Family{Name: "natscoord_lease_held", Help: "Live lease keys by kind (lease, lock, election, semaphore, waiter).", Kind: opstats.Gauge}
	for _, w := range h.leases {
		kinds := w.kindCounts()
		for _, kind := range leaseKinds {
			held.Samples = append(held.Samples, opstats.Sample{
				Labels: []opstats.Label{{Name: "bucket", Value: w.bucket}, {Name: "kind", Value: string(kind)}}, Value: float64(kinds[kind])})
		}
	}
	return append(fams, tasks, claims, phases, held)
}

// leaseKinds is the order natscoord_lease_held lists the kinds in.
var leaseKinds = []leaseKind{kindElection, kindLease, kindLock, kindSemaphore, kindWaiter}
