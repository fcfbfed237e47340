package dashboard

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/natscoord/natscoord/kvledger"
)

// metrics are the dashboard's Prometheus series, on a registry of its own
// (so two handlers in one process never collide). Gauges that describe
// current state are read from the views at scrape time; counters count
// what the dashboard's consumers saw since it started.
type metrics struct {
	reg        *prometheus.Registry
	events     *prometheus.CounterVec // ledger events by name (renewals, takeovers, ...)
	leaseEnds  *prometheus.CounterVec // lease ends by how: released, expired
	leaseRenew prometheus.Counter
	eventLag   prometheus.Gauge
	pending    prometheus.Gauge
	actions    *prometheus.CounterVec
}

func newMetrics(h *Handler) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "natscoord", Subsystem: "ledger", Name: "events_total",
			Help: "Ledger events seen on the event stream, by name (ledger.renewed counts renewals, ledger.taken_over takeovers).",
		}, []string{"event"}),
		leaseEnds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "natscoord", Subsystem: "lease", Name: "ends_total",
			Help: "Leases that ended, by how: released (a delete: the holder or a force release) or expired (the server's TTL: the holder lost it).",
		}, []string{"kind", "how"}),
		leaseRenew: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "natscoord", Subsystem: "lease", Name: "renewals_total",
			Help: "Lease writes by the same owner seen on the lease buckets (renewals).",
		}),
		eventLag: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "natscoord", Subsystem: "events", Name: "lag_seconds",
			Help: "Time from the writer's timestamp of the last event to the dashboard receiving it.",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "natscoord", Subsystem: "events", Name: "pending",
			Help: "Events on the stream not yet delivered to the dashboard's consumer.",
		}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "natscoord", Subsystem: "ui", Name: "actions_total",
			Help: "Dashboard actions, by action and result.",
		}, []string{"action", "result"}),
	}
	m.reg.MustRegister(m.events, m.leaseEnds, m.leaseRenew, m.eventLag, m.pending, m.actions,
		collectors.NewGoCollector(), &stateCollector{h: h})
	return m
}

var (
	tasksDesc = prometheus.NewDesc("natscoord_ledger_tasks", "Records of the ledger by status.",
		[]string{"status"}, nil)
	phasesDesc = prometheus.NewDesc("natscoord_ledger_task_phases", "Records of the ledger by phase (kvledger.Phase: pending, scheduled, retrying, running, completed, failed, cancelled, blocked).",
		[]string{"phase"}, nil)
	claimsDesc = prometheus.NewDesc("natscoord_ledger_claims_in_flight", "Records claimed now.", nil, nil)
	heldDesc   = prometheus.NewDesc("natscoord_lease_held", "Live lease keys by kind (lease, lock, election, semaphore, waiter).",
		[]string{"bucket", "kind"}, nil)
)

// stateCollector reports the views' current counts at scrape time.
type stateCollector struct{ h *Handler }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tasksDesc
	ch <- phasesDesc
	ch <- claimsDesc
	ch <- heldDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	counts, _ := c.h.tasks.statusCounts()
	for _, s := range allStatuses {
		ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
	ch <- prometheus.MustNewConstMetric(claimsDesc, prometheus.GaugeValue, float64(counts[kvledger.StatusClaimed]))
	phases, _ := c.h.tasks.phaseCounts(c.h.cfg.Now())
	for _, p := range kvledger.Phases {
		ch <- prometheus.MustNewConstMetric(phasesDesc, prometheus.GaugeValue, float64(phases[p]), string(p))
	}
	for _, w := range c.h.leases {
		for kind, n := range w.kindCounts() {
			ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(n), w.bucket, string(kind))
		}
	}
}

var allStatuses = []kvledger.Status{kvledger.StatusPending, kvledger.StatusClaimed,
	kvledger.StatusCompleted, kvledger.StatusFailed, kvledger.StatusBlocked}
