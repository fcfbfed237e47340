package dashboard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
)

// maxTimelineScan bounds how many stream messages one timeline reads.
// Event subjects name the event, not the key, so the read cannot be
// filtered to one task: it starts at the record's admission and ends at
// the event of the record's last write, or here.
var maxTimelineScan = 20_000

// timelineIdle ends a timeline read that receives nothing for this long.
const timelineIdle = time.Second

// timelineEntry is one line of a task's timeline: a ledger event or an
// action taken from the dashboard.
type timelineEntry struct {
	Time   time.Time
	Name   string // event name, or "ui.<action>"
	Status string
	Actor  string
	Owner  string
	Fence  uint64
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

// timeline reads key's events from the stream, starting a minute before
// the record's admission (the writer's clock may be behind the server's),
// and merges the dashboard's actions on key. Truncated reports that the
// scan stopped at its bound before reaching the stream's end.
func (h *Handler) timeline(ctx context.Context, s taskSummary) (entries []timelineEntry, truncated bool, err error) {
	st, err := h.cfg.JS.Stream(ctx, h.cfg.EventStream)
	if err != nil {
		return nil, false, fmt.Errorf("dashboard: event stream: %w", err)
	}
	last := st.CachedInfo().State.LastSeq
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: []string{h.cfg.EventSubjectPrefix + events.DefaultSubject}}
	if !s.CreatedAt.IsZero() {
		occ.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		t := s.CreatedAt.Add(-time.Minute)
		occ.OptStartTime = &t
	}
	if last > 0 {
		cons, err := h.cfg.JS.OrderedConsumer(ctx, h.cfg.EventStream, occ)
		if err != nil {
			return nil, false, fmt.Errorf("dashboard: timeline consumer: %w", err)
		}
		it, err := cons.Messages()
		if err != nil {
			return nil, false, fmt.Errorf("dashboard: timeline consumer: %w", err)
		}
		stop := context.AfterFunc(ctx, it.Stop)
		defer stop()
		defer it.Stop()
		drawn := make(map[uint64]bool)
		// No message from the start time on means nothing to show; an idle
		// bound ends that wait (messages that exist arrive in a burst).
		idle := time.AfterFunc(timelineIdle, it.Stop)
		defer idle.Stop()
		for n := 0; ; n++ {
			if n == maxTimelineScan {
				truncated = true
				break
			}
			m, err := it.Next()
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) && ctx.Err() == nil {
				break
			}
			if err != nil {
				return entries, false, fmt.Errorf("dashboard: timeline of %q: %w", string(s.Key), err)
			}
			idle.Reset(timelineIdle)
			md, err := m.Metadata()
			if err != nil {
				return entries, false, err
			}
			if ev, err := events.Unmarshal(m.Data()); err == nil && ev.Source == h.cfg.Ledger && ev.Key == string(s.Key) {
				// A record's event can be on the stream twice (a writer
				// publishes the previous write's event when it is not sure
				// it went out): one revision is one line.
				if ev.Revision > 0 && drawn[ev.Revision] {
					continue
				}
				drawn[ev.Revision] = true
				entries = append(entries, eventEntry(ev))
				if s.Rev > 0 && ev.Revision >= s.Rev {
					break // the record's last write: later events are newer than the page
				}
			}
			if md.Sequence.Stream >= last || md.NumPending == 0 {
				break
			}
		}
	}
	for _, a := range h.actionLog.all() {
		if a.Task && a.Key == string(s.Key) {
			entries = append(entries, timelineEntry{Time: a.Time, Name: "ui." + a.Action, Actor: a.Actor,
				Detail: a.Result, Action: true})
		}
	}
	slices.SortStableFunc(entries, func(a, b timelineEntry) int { return a.Time.Compare(b.Time) })
	return entries, truncated, nil
}

// eventEntry describes one event in words a reader of the timeline needs.
func eventEntry(ev events.Event) timelineEntry {
	e := timelineEntry{Time: ev.Time, Name: string(ev.Name), Status: ev.Status, Actor: ev.Actor,
		Owner: ev.Owner, Fence: ev.Fence, Rev: ev.Revision, Attempts: ev.Attempts, RunAt: ev.RunAt}
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
