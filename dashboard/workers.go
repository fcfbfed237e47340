package dashboard

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// workerRow is one live worker of this ledger as worker.LiveWorkersOf
// finds it: a claimant lease (a worker, or a Ledger claiming WithLeases)
// and the tasks whose records name it, or an idle worker's presence
// lease; with the kinds its lease states.
type workerRow struct {
	leaseRow
	Owner kvledger.OwnerID
	Tasks []taskSummary
	// Kinds, KindsKnown, KindsLeftOut and Idle: worker.LiveWorker's.
	Kinds        []string
	KindsKnown   bool
	KindsLeftOut int
	Idle         bool
}

// kindAlert is a kind with pending tasks (due now) that no live worker
// states it handles.
type kindAlert struct {
	Kind    string
	Pending int
}

// unserved returns the kinds with pending tasks at now that no live
// worker handles, by name, and how many live claimants state no kinds
// (a Ledger claiming WithLeases, an older worker), which might. It reads
// the leases and the phase counts only (kvledger.Tally), never the
// records, so the overview can ask it on every render.
func (h *Handler) unserved(now time.Time) (alerts []kindAlert, unknown int) {
	served := make(map[string]bool)
	_, holders := h.workerLeases()
	for _, w := range worker.LiveWorkersOf(h.cfg.Ledger, holders, nil) {
		if !w.KindsKnown {
			unknown++
		}
		for _, k := range w.Kinds {
			served[k] = true
		}
	}
	for kind, byPhase := range h.tasks.phases.Counts(now).ByKind {
		if n := byPhase[kvledger.PhasePending]; n > 0 && kind != "" && !served[kind] {
			alerts = append(alerts, kindAlert{kind, n})
		}
	}
	slices.SortFunc(alerts, func(a, b kindAlert) int { return strings.Compare(a.Kind, b.Kind) })
	return alerts, unknown
}

// workerLeases are the live workers' leases of the ledger in every lease
// bucket shown (each view's claimants, worker.IsWorkerLease), as rows and
// as the holders worker.LiveWorkersOf reads, by key. Only those are read,
// not a copy of every lease in the buckets.
func (h *Handler) workerLeases() (map[string]leaseRow, map[string]kvlease.Holder) {
	rows := make(map[string]leaseRow)
	holders := make(map[string]kvlease.Holder)
	for _, v := range h.leases {
		v.eachClaimant(func(l leaseRow) { rows[l.Key], holders[l.Key] = l, l.holder })
	}
	return rows, holders
}

// scheduleRow is one schedule: stored in the ledger (schedules.go), or
// seen in its periods' keys, or both; its newest period and that
// period's task.
type scheduleRow struct {
	Name    string
	Periods int // periods whose record the ledger still holds
	Last    time.Time
	Task    taskSummary
	Phase   kvledger.Phase
	// Stored schedules: the spec, its zone, the kind and the next period.
	Stored bool
	// Removed: not stored, and the dashboard saw it go: its watch
	// delivered the removal, or a new watch no longer delivered a schedule
	// the one before had (schedules.go). A schedule neither stored nor
	// removed is registered in a worker's code, or was removed before the
	// dashboard's watch saw it.
	Removed  bool
	Spec     string
	TimeZone string
	Kind     string
	Next     time.Time
}

type workersData struct {
	common
	Workers   []workerRow
	Buckets   []string // the lease buckets read
	Schedules []scheduleRow
	// Unserved are the kinds with pending tasks and no live worker;
	// Unknown counts the live claimants that state no kinds.
	Unserved []kindAlert
	Unknown  int
}

func (h *Handler) workers(r *http.Request) workersData {
	d := workersData{common: h.common(r, "Workers & schedules", "workers"), Buckets: h.cfg.LeaseBuckets}
	d.Unserved, d.Unknown = h.unserved(h.cfg.Clock.Now())
	d.Workers = h.workerRows()
	d.Schedules = h.scheduleRows()
	return d
}

// workerRows are the live workers of the ledger (workerLeases) and the
// tasks whose records name their claim leases; which of the leases is a
// live worker is worker.LiveWorkersOf's rule.
func (h *Handler) workerRows() []workerRow {
	rows, holders := h.workerLeases()
	if len(holders) == 0 {
		return nil // no claimant: the claimed records need not be read
	}
	claims, summaries := h.tasks.claims()
	var out []workerRow
	for _, w := range worker.LiveWorkersOf(h.cfg.Ledger, holders, claims) {
		row := workerRow{leaseRow: rows[w.Lease], Owner: w.Owner, Kinds: w.Kinds, KindsKnown: w.KindsKnown,
			KindsLeftOut: w.KindsLeftOut, Idle: w.Idle}
		for _, t := range w.Tasks {
			row.Tasks = append(row.Tasks, summaries[t.Key])
		}
		out = append(out, row)
	}
	return out
}

// eachClaimant calls fn with each row of a claimant lease of the ledger
// (claimPrefix), under the view's read lock: fn must not block.
func (v *leaseView) eachClaimant(fn func(leaseRow)) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for k := range v.claimants {
		fn(v.rows[k])
	}
}

func (h *Handler) workersPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, "workers", "base", http.StatusOK, h.workers(r))
}

func (h *Handler) workersFragment(w http.ResponseWriter, r *http.Request) {
	h.render(w, "workers", "workersBody", http.StatusOK, h.workers(r))
}

// claims returns the claimed records that name a lease, as the fields
// worker.LiveWorkersOf reads, and their summaries by key.
func (v *taskView) claims() ([]kvledger.TaskState, map[kvledger.IdempotencyKey]taskSummary) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []kvledger.TaskState
	byKey := make(map[kvledger.IdempotencyKey]taskSummary)
	for _, e := range v.order {
		if e.Status == kvledger.StatusClaimed && e.Lease != "" {
			out = append(out, kvledger.TaskState{Key: e.Key, Status: e.Status, Lease: e.Lease, Owner: e.Owner, Fence: e.Fence, Kind: e.Kind})
			byKey[e.Key] = e.taskSummary
		}
	}
	return out, byKey
}

// scheduleNames are the names of the schedules that tasks of their
// periods in the view show: those schedules lists.
func (v *taskView) scheduleNames() map[string]bool {
	rows := v.schedules()
	names := make(map[string]bool, len(rows))
	for _, s := range rows {
		names[s.Name] = true
	}
	return names
}

// schedules returns every schedule whose periods' records the view holds
// (keys made by worker.PeriodKey), with its newest period, by name.
func (v *taskView) schedules() []scheduleRow {
	v.mu.RLock()
	byName := make(map[string]*scheduleRow)
	for _, e := range v.order {
		name, start, ok := worker.ParsePeriodKey(e.Key)
		if !ok {
			continue
		}
		s := byName[name]
		if s == nil {
			s = &scheduleRow{Name: name}
			byName[name] = s
		}
		s.Periods++
		if !start.Before(s.Last) {
			s.Last, s.Task = start, e.taskSummary
		}
	}
	v.mu.RUnlock()
	out := make([]scheduleRow, 0, len(byName))
	for _, s := range byName {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b scheduleRow) int { return strings.Compare(a.Name, b.Name) })
	return out
}
