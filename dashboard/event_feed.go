package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvledger"
)

// recentEvents is how many of the newest events the live stream page and
// the ring start with.
const recentEvents = 200

// knownEvents are the ledger's event names: the only ones counted by
// name on /metrics (anyone who may write the bucket can invent names;
// each would be a series).
var knownEvents = func() map[events.Name]bool {
	m := make(map[events.Name]bool, len(kvledger.EventNames))
	for _, e := range kvledger.EventNames {
		m[e] = true
	}
	return m
}()

// otherEvent is the label every unknown event name is counted under.
const otherEvent = "other"

// startEventFeed follows the ledger bucket's stream (its writes are the
// events: kvledger.EventSource) for the events page, its live rows, the
// event counters and the finished chart. It starts recentEvents messages
// before the stream's end, or at the last chartWindow's first write when
// that is earlier, so that one consumer (no second one) also counts the
// finishes of the hour before the dashboard started: those older writes
// are counted, not kept, and only a completion among them is decoded.
// The task view does not read events (see recordFeed).
func (h *Handler) startEventFeed(ctx context.Context) error {
	src := h.store.EventSource()
	st, err := h.cfg.JS.Stream(ctx, src.Stream)
	if err != nil {
		return fmt.Errorf("dashboard: ledger stream %q: %w", src.Stream, err)
	}
	last := st.CachedInfo().State.LastSeq
	ring := uint64(1)
	if last > recentEvents {
		ring = last - recentEvents + 1
	}
	since := h.cfg.Clock.Now().Add(-chartWindow)
	ccfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{src.Subject},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    ring,
	}
	if ring > 1 {
		switch before, err := storedBefore(ctx, st, src.Subject, ring, since); {
		case err != nil:
			// The ring comes first: the chart may miss the part of the
			// hour before it, and says nothing false about it.
			h.cfg.Logger.Warn("dashboard: the finished chart starts at the recent events", "err", err)
		case !before:
			ccfg.DeliverPolicy, ccfg.OptStartSeq, ccfg.OptStartTime = jetstream.DeliverByStartTimePolicy, 0, &since
		}
	}
	cons, err := h.cfg.JS.OrderedConsumer(ctx, src.Stream, ccfg)
	if err != nil {
		return fmt.Errorf("dashboard: event consumer: %w", err)
	}
	// caughtUp closes once the consumer delivered the stream's last
	// message as of the start, so the recent-events ring is full when New
	// returns; the charts say they are still reading the hour until then.
	caughtUp := make(chan struct{})
	h.eventsCaughtUp = caughtUp
	var once sync.Once
	caught := func() {
		once.Do(func() {
			close(caughtUp)
			h.broker.publish(push{Type: "chart", Data: []byte("{}")})
		})
	}
	if ring > last {
		caught()
	}
	feed := eventFeedStart{ring: ring, last: last}
	c, err := kvx.Consume(cons, func(_ context.Context, m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			return
		}
		h.onEventMsg(m, md, feed)
		if md.Sequence.Stream >= last || md.NumPending == 0 {
			caught()
		}
	}, func(err error) { h.cfg.Logger.Warn("dashboard: event consumer", "err", err) })
	if err != nil {
		return fmt.Errorf("dashboard: event consumer: %w", err)
	}
	h.stops = append(h.stops, c.Stop)
	if ci := cons.CachedInfo(); ci != nil && ci.NumPending == 0 {
		caught() // nothing to read from where it starts
	}
	// Not reaching it (the stream's last message is not a task write, or
	// the hour holds many) only leaves the ring short or the chart
	// filling for a while: wait a bounded moment (real time: a wait on
	// the server), then go on.
	t := clock.NewTimer(clock.Real())
	t.Reset(2 * time.Second)
	select {
	case <-caughtUp:
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	return nil
}

// storedBefore reports whether the stream's first write on subject at or
// after seq was stored before t; false when there is none (the ring then
// keeps nothing, and starting at t costs it nothing).
func storedBefore(ctx context.Context, st jetstream.Stream, subject string, seq uint64, t time.Time) (bool, error) {
	m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return m.Time.Before(t), nil
}

// eventFeedStart is where the event feed started: ring is the first
// sequence the recent-events ring keeps, last the stream's last sequence
// when the feed started (later writes are live).
type eventFeedStart struct {
	ring, last uint64
}

// onEventMsg handles one stream message and its metadata. Messages
// before f.ring are read for the finished chart only; those up to f.last
// were written before the dashboard started: they fill the recent-events
// ring but are not counted on /metrics or announced as live.
func (h *Handler) onEventMsg(m jetstream.Msg, md *jetstream.MsgMetadata, f eventFeedStart) {
	seq := md.Sequence.Stream
	h.metrics.pending.Set(float64(md.NumPending))
	if n := events.Name(m.Headers().Get(kvledger.EventHeader)); seq < f.ring && knownEvents[n] && n != kvledger.CompletedEvent {
		return // the chart counts completions only; any other name is not decoded
	}
	ev, ok, err := kvledger.DecodeEvent(events.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data(),
		Revision: seq, Time: md.Timestamp})
	if err != nil {
		h.cfg.Logger.Warn("dashboard: undecodable ledger write", "subject", m.Subject(), "err", err)
		return
	}
	if !ok {
		return
	}
	if ev.Name == kvledger.CompletedEvent {
		h.finishes.add(ev.Time, h.cfg.Clock.Now(), ev.Status == string(kvledger.StatusFailed))
	}
	if seq < f.ring {
		return
	}
	h.recent.add(ev)
	if seq <= f.last {
		return
	}
	name, status := otherEvent, ""
	if knownEvents[ev.Name] {
		name = string(ev.Name)
	}
	if st := kvledger.Status(ev.Status); st.Valid() {
		status = ev.Status // a ledger.completed's outcome; a marker has none
	}
	h.metrics.eventLag.Set(max(0, h.cfg.Clock.Now().Sub(ev.Time).Seconds()))
	h.metrics.events.Inc(name, status)
	h.broker.publish(push{Type: "event", Data: eventJSON(ev)})
}

// liveEvent is the JSON a browser receives for a ledger event or a
// record change. Ref is the query-escaped key (exact for any bytes); Key
// is its display form.
type liveEvent struct {
	Name   string `json:"name"`
	Ref    string `json:"ref"`
	Key    string `json:"key"`
	Status string `json:"status,omitempty"`
	// Phase is the record's phase when the dashboard saw the change
	// (record changes only): what a badge shows.
	Phase     string `json:"phase,omitempty"`
	Owner     string `json:"owner,omitempty"`
	Fence     uint64 `json:"fence"`
	BlockedBy string `json:"blocked_by,omitempty"`
	// Error is the record's last error as a task list shows it
	// (taskSummary.ErrorLine; record changes only).
	Error    string `json:"error,omitempty"`
	Revision uint64 `json:"revision"`
	Time     string `json:"time"`
}

func eventJSON(ev events.Event) []byte {
	b, _ := json.Marshal(liveEvent{Name: string(ev.Name), Ref: keyRef(ev.Key), Key: displayKey(ev.Key),
		Status: ev.Status, Owner: displayKey(ev.Owner), Fence: ev.Fence, BlockedBy: displayKey(ev.BlockedBy),
		Revision: ev.Revision, Time: ev.Time.UTC().Format(time.RFC3339Nano)})
	return b
}

// recordJSON is the live form of a record change: what the rows showing
// the record update from. now judges its phase.
func recordJSON(s taskSummary, now time.Time) []byte {
	var phase kvledger.Phase
	if s.Status != "" {
		phase = s.Phase(now)
	}
	b, _ := json.Marshal(liveEvent{Name: string(s.LastEvent), Ref: keyRef(string(s.Key)), Key: displayKey(string(s.Key)),
		Status: string(s.Status), Phase: string(phase), Owner: displayKey(string(s.Owner)), Fence: uint64(s.Fence),
		BlockedBy: displayKey(string(s.BlockedBy)), Error: s.ErrorLine, Revision: s.Rev, Time: s.UpdatedAt.UTC().Format(time.RFC3339Nano)})
	return b
}
