package dashboard

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/natscoord/natscoord/kvledger"
)

// pausedKinds holds the kinds paused in the ledger (kvledger.Pause),
// kept by the record feed's watch, which asks for the pause keys too: the
// overview lists them and offers the toggle.
type pausedKinds struct {
	mu sync.RWMutex
	m  map[string]kvledger.Pause
	// delivered names the kinds a new watch has delivered since reset;
	// nil when no watch is syncing.
	delivered map[string]bool
}

// reset starts a new watch's sync: it delivers every paused kind again
// before its Synced marker (synced).
func (p *pausedKinds) reset() {
	p.mu.Lock()
	p.delivered = make(map[string]bool)
	p.mu.Unlock()
}

// synced ends a new watch's sync: a kind held as paused that it did not
// deliver was resumed while no watch ran.
func (p *pausedKinds) synced() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for kind := range p.m {
		if p.delivered != nil && !p.delivered[kind] {
			delete(p.m, kind)
		}
	}
	p.delivered = nil
}

func (p *pausedKinds) apply(c kvledger.PauseChange) {
	if c.Kind == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.delivered != nil {
		p.delivered[c.Kind] = true
	}
	if !c.Paused {
		delete(p.m, c.Kind)
		return
	}
	if p.m == nil {
		p.m = make(map[string]kvledger.Pause)
	}
	p.m[c.Kind] = c.Pause
}

func (p *pausedKinds) get(kind string) (kvledger.Pause, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.m[kind]
	return v, ok
}

// all returns the paused kinds' pauses.
func (p *pausedKinds) all() []kvledger.Pause {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Collect(maps.Values(p.m))
}

// onPause applies one change of a kind's pause (the record watch's
// goroutine) and tells open pages, whose overview reloads.
func (h *Handler) onPause(c kvledger.PauseChange) {
	if c.Err != nil {
		h.cfg.Logger.Warn("dashboard: ledger holds a pause that does not decode; the kind shows paused", "ledger", h.cfg.Ledger, "kind", c.Kind, "err", c.Err)
	}
	h.pauses.apply(c)
	data, _ := json.Marshal(struct {
		Kind   string `json:"kind"`
		Paused bool   `json:"paused"`
	}{c.Kind, c.Paused})
	h.broker.publish(push{Type: "pause", Data: data})
}

// kindRow is one kind on the overview: its ready and running tasks, and
// whether it is paused (with the revision its resume is bound to).
type kindRow struct {
	Kind            string
	Ready, Running  int
	Paused          bool
	PausedSchedules bool
	PausedBy        string
	Rev             uint64
	CanAct          bool
}

// kindRows lists every kind that has tasks or is paused, by name.
func (h *Handler) kindRows(byKind map[string]map[kvledger.Phase]int) []kindRow {
	canAct := h.offered(actPause)
	rows := make(map[string]*kindRow)
	for kind, byPhase := range byKind {
		if kind == "" {
			continue
		}
		rows[kind] = &kindRow{Kind: kind, Ready: byPhase[kvledger.PhasePending], Running: byPhase[kvledger.PhaseRunning]}
	}
	for _, p := range h.pauses.all() {
		r := rows[p.Kind]
		if r == nil {
			r = &kindRow{Kind: p.Kind}
			rows[p.Kind] = r
		}
		r.Paused, r.PausedSchedules, r.PausedBy, r.Rev = true, p.Schedules, string(p.Actor), p.Rev
	}
	out := make([]kindRow, 0, len(rows))
	for _, r := range rows {
		r.CanAct = canAct
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b kindRow) int { return strings.Compare(a.Kind, b.Kind) })
	return out
}
