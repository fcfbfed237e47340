package dashboard

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/natscoord/natscoord/kvledger"
)

// storedSchedules holds the schedules stored in the ledger
// (kvledger.Schedule), kept by the record feed's watch, which asks for the
// schedule keys too: the workers page lists them with their next period.
type storedSchedules struct {
	mu sync.RWMutex
	m  map[string]storedSchedule
}

// storedSchedule is one stored schedule with its periods, parsed once by
// the watch (kvledger.ScheduleChange.Periods) rather than on each render.
type storedSchedule struct {
	kvledger.Schedule
	periods kvledger.SchedulePeriods
}

// reset forgets every schedule: a new watch delivers them all again.
func (s *storedSchedules) reset() {
	s.mu.Lock()
	s.m = nil
	s.mu.Unlock()
}

// apply records one change; a value that is not a schedule is dropped.
func (s *storedSchedules) apply(c kvledger.ScheduleChange) {
	if c.Name == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Deleted || c.Err != nil {
		delete(s.m, c.Name)
		return
	}
	if s.m == nil {
		s.m = make(map[string]storedSchedule)
	}
	s.m[c.Name] = storedSchedule{c.Schedule, c.Periods}
}

// get returns the stored schedule name.
func (s *storedSchedules) get(name string) (storedSchedule, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sc, ok := s.m[name]
	return sc, ok
}

// names returns the stored schedules' names, sorted.
func (s *storedSchedules) names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.m))
}

// onSchedule applies one change of a stored schedule (the record watch's
// goroutine) and tells open pages, whose schedule fragments reload.
func (h *Handler) onSchedule(c kvledger.ScheduleChange) {
	if c.Err != nil {
		h.cfg.Logger.Warn("dashboard: ledger holds a schedule that does not decode", "ledger", h.cfg.Ledger, "schedule", c.Name, "err", c.Err)
	}
	h.schedules.apply(c)
	data, _ := json.Marshal(struct {
		Name string `json:"name"`
	}{c.Name})
	h.broker.publish(push{Type: "schedule", Data: data})
}

// scheduleRows merges the stored schedules with those seen in the
// ledger's period keys (stored ones, and those registered in workers'
// code, which only their periods show), by name.
func (h *Handler) scheduleRows() []scheduleRow {
	now := h.cfg.Clock.Now()
	seen := h.tasks.schedules()
	byName := make(map[string]int, len(seen))
	for i := range seen {
		seen[i].Phase = seen[i].Task.Phase(now)
		byName[seen[i].Name] = i
	}
	for _, name := range h.schedules.names() {
		sc, ok := h.schedules.get(name)
		if !ok {
			continue
		}
		i, had := byName[name]
		if !had {
			seen = append(seen, scheduleRow{Name: name})
			i = len(seen) - 1
		}
		r := &seen[i]
		r.Stored, r.Spec, r.TimeZone, r.Kind, r.Next = true, sc.Spec, sc.TimeZone, sc.Task.Kind, sc.periods.Next(now)
		if r.TimeZone == "" {
			r.TimeZone = "UTC"
		}
	}
	slices.SortFunc(seen, func(a, b scheduleRow) int { return strings.Compare(a.Name, b.Name) })
	return seen
}
