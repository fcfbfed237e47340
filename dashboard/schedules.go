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
	// removed names the schedules whose removal the watch delivered, or
	// that a new watch no longer delivered (synced), and that are not
	// stored again: their periods' tasks, which the ledger keeps, list
	// them, and they are labelled removed, not taken for schedules
	// registered in a worker's code. A name no task of its periods lists
	// has no row to label; it is dropped at a watch's sync (synced), not
	// at its removal: a worker that had not yet seen the removal may
	// still admit a period, whose task must show it removed, not "not
	// stored". So the set holds the names the task view listed at the last
	// sync and those removed since: a dashboard whose watch never
	// restarts keeps one short name per schedule an operator removed.
	removed map[string]struct{}
	// delivered names the schedules a new watch has delivered since
	// reset; nil when no watch is syncing.
	delivered map[string]bool
}

// storedSchedule is one stored schedule with its periods, parsed once by
// the watch (kvledger.ScheduleChange.Periods) rather than on each render.
type storedSchedule struct {
	kvledger.Schedule
	periods kvledger.SchedulePeriods
}

// reset starts a new watch's sync: it delivers every stored schedule
// again before its Synced marker (synced). The schedules held stay
// listed meanwhile.
func (s *storedSchedules) reset() {
	s.mu.Lock()
	s.delivered = make(map[string]bool)
	s.mu.Unlock()
}

// synced ends a new watch's sync: a schedule held before that it did not
// deliver was removed while no watch ran (a restart of the watch), so it
// is marked removed as a delivered removal is. listed are the schedule
// names that tasks of their periods show: every other removed name is
// dropped (removed's bound).
func (s *storedSchedules) synced(listed map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.m {
		if !s.delivered[name] {
			delete(s.m, name)
			s.markRemovedLocked(name)
		}
	}
	s.delivered = nil
	for name := range s.removed {
		if !listed[name] {
			delete(s.removed, name)
		}
	}
}

func (s *storedSchedules) markRemovedLocked(name string) {
	if s.removed == nil {
		s.removed = make(map[string]struct{})
	}
	s.removed[name] = struct{}{}
}

// apply records one change; a value that is not a schedule is dropped.
func (s *storedSchedules) apply(c kvledger.ScheduleChange) {
	if c.Name == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.delivered != nil {
		s.delivered[c.Name] = true
	}
	switch {
	case c.Deleted:
		delete(s.m, c.Name)
		s.markRemovedLocked(c.Name)
		return
	case c.Err != nil:
		// A value that is not a schedule: no schedule is stored, and
		// none was removed.
		delete(s.m, c.Name)
		delete(s.removed, c.Name)
		return
	}
	delete(s.removed, c.Name)
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

// wasRemoved reports whether the watch delivered the removal of the
// schedule name and it is not stored again.
func (s *storedSchedules) wasRemoved(name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.removed[name]
	return ok
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
// ledger's period keys (stored ones, removed ones whose periods' tasks
// the ledger keeps, and those registered in workers' code, which only
// their periods show), by name.
func (h *Handler) scheduleRows() []scheduleRow {
	now := h.cfg.Clock.Now()
	seen := h.tasks.schedules()
	byName := make(map[string]int, len(seen))
	for i := range seen {
		seen[i].Phase = seen[i].Task.Phase(now)
		seen[i].Removed = h.schedules.wasRemoved(seen[i].Name)
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
		r.Stored, r.Removed, r.Spec, r.TimeZone, r.Kind, r.Next = true, false, sc.Spec, sc.TimeZone, sc.Task.Kind, sc.periods.Next(now)
		if r.TimeZone == "" {
			r.TimeZone = "UTC"
		}
	}
	slices.SortFunc(seen, func(a, b scheduleRow) int { return strings.Compare(a.Name, b.Name) })
	return seen
}
