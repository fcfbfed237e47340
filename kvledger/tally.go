package kvledger

import (
	"sync"
	"time"

	"github.com/natscoord/natscoord/internal/heapx"
)

// Tally counts a ledger's records by phase and kind, kept current from a
// record watch's changes (Apply), so that "how many tasks are pending?"
// costs a map read, not a scan of the ledger. A change costs O(log n)
// (a record with a RunAt ahead is filed by its due time, so that it turns
// from scheduled or retrying to pending when the time comes); Counts
// costs the kinds times the phases. Safe for concurrent use.
type Tally struct {
	mu     sync.Mutex
	recs   map[IdempotencyKey]tallied
	counts map[string]map[Phase]int // kind -> phase -> records
	due    *heapx.Heap[dueEntry]
	gen    uint64 // tells a key's current entry from the stale ones in due
}

// tallied is what the tally remembers of one record.
type tallied struct {
	kind  string
	phase Phase
	gen   uint64
}

type dueEntry struct {
	at  time.Time
	key IdempotencyKey
	gen uint64
}

// Counts is a Tally's answer.
type Counts struct {
	// Total is the number of records.
	Total int `json:"total"`
	// ByPhase counts records per phase (phases with none are absent).
	ByPhase map[Phase]int `json:"by_phase"`
	// ByKind counts records per kind and phase ("" for tasks without a
	// kind).
	ByKind map[string]map[Phase]int `json:"by_kind"`
}

// NewTally returns an empty tally.
func NewTally() *Tally {
	return &Tally{
		recs:   make(map[IdempotencyKey]tallied),
		counts: make(map[string]map[Phase]int),
		due:    heapx.New(func(a, b dueEntry) bool { return a.at.Before(b.at) }, nil),
	}
}

// Apply records one change of a record watch. Synced markers and changes
// whose value is not a record (Err) leave the counts as they are, except
// that a corrupt value forgets the key's previous record.
func (t *Tally) Apply(c Change, now time.Time) {
	if c.Synced || c.Key == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.recs[c.Key]; ok {
		t.add(old.kind, old.phase, -1)
		delete(t.recs, c.Key)
	}
	if c.Deleted || c.Err != nil {
		return
	}
	t.gen++
	e := tallied{kind: c.Record.Kind, phase: c.Record.Phase(now), gen: t.gen}
	t.recs[c.Key] = e
	t.add(e.kind, e.phase, 1)
	if e.phase == PhaseScheduled || e.phase == PhaseRetrying {
		t.due.Push(dueEntry{at: c.Record.RunAt, key: c.Key, gen: e.gen})
	}
}

// Counts returns the counts at now: records whose RunAt has come are
// counted as pending.
func (t *Tally) Counts(now time.Time) Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		d, ok := t.due.Peek()
		if !ok || d.at.After(now) {
			break
		}
		t.due.Pop()
		if e, ok := t.recs[d.key]; ok && e.gen == d.gen {
			t.add(e.kind, e.phase, -1)
			e.phase = PhasePending
			t.recs[d.key] = e
			t.add(e.kind, e.phase, 1)
		}
	}
	out := Counts{Total: len(t.recs), ByPhase: make(map[Phase]int), ByKind: make(map[string]map[Phase]int, len(t.counts))}
	for kind, byPhase := range t.counts {
		m := make(map[Phase]int, len(byPhase))
		for p, n := range byPhase {
			m[p] = n
			out.ByPhase[p] += n
		}
		out.ByKind[kind] = m
	}
	return out
}

// add changes the count of (kind, phase) by n, dropping empty entries so
// that the maps stay as large as what they count.
func (t *Tally) add(kind string, p Phase, n int) {
	m := t.counts[kind]
	if m == nil {
		m = make(map[Phase]int)
		t.counts[kind] = m
	}
	m[p] += n
	if m[p] == 0 {
		delete(m, p)
		if len(m) == 0 {
			delete(t.counts, kind)
		}
	}
}
