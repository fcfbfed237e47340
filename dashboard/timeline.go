package dashboard

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
)

// timelineEntry is one line of a task's timeline: a ledger event or an
// action taken from the dashboard.
type timelineEntry struct {
	Time   time.Time
	Name   string // event name, or "ui.<action>"
	Actor  string
	Rev    uint64
	Detail string
	Action bool
	// Outcome colours the line: "ok", "bad", "warn" or "" (neither).
	Outcome string
	// From a task runtime, when its events carry them. Error is set only
	// on an event that ends an attempt (a retry, a failed completion, a
	// cancel): every event carries the record's LastError, so a claim
	// would otherwise repeat the error of the attempt before it.
	Attempts int
	Error    string
	RunAt    time.Time
}

// timeline reads key's writes (its events) from the ledger bucket, which
// keeps the last kvledger.EventHistory of them, and merges the
// dashboard's actions on key. The task's attempts are read from the same
// events (kvledger.AttemptsOf), so the page reads the key's writes once.
// Truncated reports that earlier writes of the key have left the bucket
// (its first kept write names a previous one).
func (h *Handler) timeline(ctx context.Context, s taskSummary) (entries []timelineEntry, attempts []kvledger.Attempt, truncated bool, err error) {
	evs, err := h.ledger.KeyEvents(ctx, s.Key)
	if err != nil {
		return nil, nil, false, fmt.Errorf("dashboard: timeline of %q: %w", string(s.Key), err)
	}
	attempts = kvledger.AttemptsOf(evs)
	truncated = len(evs) > 0 && evs[0].PrevRevision != 0
	for _, ev := range evs {
		entries = append(entries, eventEntry(ev))
	}
	for _, a := range h.actionLog.all() {
		if a.Task && a.Key == string(s.Key) {
			entries = append(entries, timelineEntry{Time: a.Time, Name: "ui." + a.Action, Actor: a.Actor,
				Detail: a.Result, Action: true})
		}
	}
	slices.SortStableFunc(entries, func(a, b timelineEntry) int { return a.Time.Compare(b.Time) })
	return entries, attempts, truncated, nil
}

// eventEntry describes one event in words a reader of the timeline needs.
func eventEntry(ev events.Event) timelineEntry {
	e := timelineEntry{Time: ev.Time, Name: string(ev.Name), Actor: ev.Actor, Rev: ev.Revision,
		Attempts: ev.Attempts, RunAt: ev.RunAt}
	switch ev.Name {
	case kvledger.CompletedEvent:
		e.Outcome = "ok"
		if ev.Status != string(kvledger.StatusCompleted) {
			e.Outcome, e.Error = "bad", ev.LastError
		}
	case kvledger.RetriedEvent:
		e.Outcome, e.Error = "warn", ev.LastError
	case kvledger.CancelledEvent:
		e.Outcome, e.Error = "bad", ev.LastError
	case kvledger.BlockedEvent, kvledger.TakenOverEvent:
		e.Outcome = "warn"
	}
	if ev.Name != kvledger.RetriedEvent && ev.Status != string(kvledger.StatusPending) {
		e.RunAt = time.Time{} // a run-at means something only while pending
	}
	switch ev.Name {
	case kvledger.AdmittedEvent:
		e.Detail = "admitted as " + ev.Status
	case kvledger.ClaimedEvent:
		e.Detail = fmt.Sprintf("claimed by %s with fence %d", displayKey(ev.Owner), ev.Fence)
	case kvledger.RenewedEvent:
		e.Detail = fmt.Sprintf("lease renewed by %s (fence %d)", displayKey(ev.Owner), ev.Fence)
	case kvledger.TakenOverEvent:
		e.Detail = fmt.Sprintf("taken over by %s with fence %d: the previous owner is fenced out", displayKey(ev.Owner), ev.Fence)
	case kvledger.ReleasedEvent:
		e.Detail = "released back to pending"
	case kvledger.CompletedEvent:
		e.Detail = fmt.Sprintf("finished %s by %s (fence %d)", ev.Status, displayKey(ev.Owner), ev.Fence)
	case kvledger.BlockedEvent:
		e.Detail = "blocked by " + displayKey(ev.BlockedBy)
	case kvledger.ReopenedEvent:
		e.Detail = fmt.Sprintf("reopened: pending again with fence %d", ev.Fence)
	case kvledger.UnblockedEvent:
		e.Detail = "unblocked: its blocker was reopened"
	case kvledger.SnoozedEvent:
		e.Detail = "snoozed by its handler: it runs again later, this attempt not counted"
	case kvledger.RunNowEvent:
		e.Detail = "made ready at once (run now), attempts unchanged"
	case kvledger.CancelledEvent:
		e.Detail = "cancelled"
	case kvledger.RetriedEvent:
		e.Detail = "attempt failed; it will be retried"
	case kvledger.DeletedEvent:
		e.Detail = "record deleted"
	default:
		e.Detail = ev.Status
	}
	return e
}
