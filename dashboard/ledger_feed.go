package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvledger"
)

// recentEvents is how many of the newest events the live stream page and
// the ring start with.
const recentEvents = 200

// openLedger binds (or, with Create, makes) the ledger bucket and the
// event stream.
func (h *Handler) openLedger(ctx context.Context) error {
	js := h.cfg.JS
	if _, err := js.KeyValue(ctx, h.cfg.Ledger); err != nil {
		if !errors.Is(err, jetstream.ErrBucketNotFound) || !h.cfg.Create {
			return fmt.Errorf("dashboard: ledger bucket %q: %w", h.cfg.Ledger, err)
		}
	}
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: h.cfg.Ledger})
	if err != nil {
		return fmt.Errorf("dashboard: ledger bucket %q: %w", h.cfg.Ledger, err)
	}
	if h.ledger, err = kvledger.New(store, nil); err != nil {
		return err
	}
	if _, err := js.Stream(ctx, h.cfg.EventStream); err != nil {
		if !errors.Is(err, jetstream.ErrStreamNotFound) || !h.cfg.Create {
			return fmt.Errorf("dashboard: event stream %q: %w", h.cfg.EventStream, err)
		}
		if _, err := events.NewJetStreamBus(ctx, js, events.JetStreamBusConfig{Stream: h.cfg.EventStream, SubjectPrefix: h.cfg.EventSubjectPrefix}); err != nil {
			return fmt.Errorf("dashboard: event stream %q: %w", h.cfg.EventStream, err)
		}
	}
	return nil
}

// startLedgerFeed fills the task view and keeps it current. The stream
// position is taken first, the store is read second, and the consumer
// delivers from that position on: a write during the read is either in
// the read or in a later event, and the view's revision check makes
// applying both harmless.
func (h *Handler) startLedgerFeed(ctx context.Context) error {
	st, err := h.cfg.JS.Stream(ctx, h.cfg.EventStream)
	if err != nil {
		return fmt.Errorf("dashboard: event stream %q: %w", h.cfg.EventStream, err)
	}
	last := st.CachedInfo().State.LastSeq
	// The store returns records in the order of their last write; the view
	// keeps admission order, so sort by admission time first.
	var all []taskSummary
	err = h.ledger.Store().Range(ctx, func(s kvledger.TaskState) bool {
		all = append(all, summarize(s, h.cfg.KindOf(s)))
		return true
	})
	if corrupt := (*kvledger.CorruptRecordsError)(nil); errors.As(err, &corrupt) {
		// Range passed every valid record: show those, and say which
		// values are not records (an operator removes them with
		// `natscoord ledger rm --force`).
		h.cfg.Logger.Warn("dashboard: ledger holds values that are not records", "ledger", h.cfg.Ledger, "err", err)
		err = nil
	}
	if err != nil {
		return fmt.Errorf("dashboard: read ledger %q: %w", h.cfg.Ledger, err)
	}
	slices.SortStableFunc(all, func(a, b taskSummary) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, s := range all {
		h.tasks.put(s)
	}
	start := uint64(1)
	if last > recentEvents {
		start = last - recentEvents + 1
	}
	cons, err := h.cfg.JS.OrderedConsumer(ctx, h.cfg.EventStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{h.cfg.EventSubjectPrefix + events.DefaultSubject},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    start,
	})
	if err != nil {
		return fmt.Errorf("dashboard: event consumer: %w", err)
	}
	// caughtUp closes once the consumer delivered the stream's last event
	// as of the read, so the recent-events ring is full when New returns.
	caughtUp := make(chan struct{})
	var once sync.Once
	if start > last {
		once.Do(func() { close(caughtUp) })
	}
	c, err := kvx.Consume(cons, func(ctx context.Context, m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			md = nil // not a JetStream message: handled as a live event
		}
		h.onEventMsg(ctx, m, md, last)
		if md != nil && (md.Sequence.Stream >= last || md.NumPending == 0) {
			once.Do(func() { close(caughtUp) })
		}
	}, func(err error) { h.cfg.Logger.Warn("dashboard: event consumer", "err", err) })
	if err != nil {
		return fmt.Errorf("dashboard: event consumer: %w", err)
	}
	h.stops = append(h.stops, c.Stop)
	// Not reaching it (the stream's last message is outside "ledger.>")
	// only leaves the ring short: wait a bounded moment, then go on.
	select {
	case <-caughtUp:
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
	}
	return nil
}

// onEventMsg handles one stream message, md its metadata (nil when it
// has none). Messages at or below startLast were written before the store
// was read: they fill the recent-events ring but are not announced as
// live. ctx ends with the consumption.
func (h *Handler) onEventMsg(ctx context.Context, m jetstream.Msg, md *jetstream.MsgMetadata, startLast uint64) {
	ev, err := events.Unmarshal(m.Data())
	if err != nil {
		h.cfg.Logger.Warn("dashboard: undecodable event", "subject", m.Subject(), "err", err)
		return
	}
	if md != nil {
		h.metrics.pending.Set(float64(md.NumPending))
		if md.Sequence.Stream <= startLast {
			if ev.Source == h.cfg.Ledger {
				h.recent.add(ev)
			}
			return
		}
	}
	if ev.Source != h.cfg.Ledger {
		return
	}
	h.metrics.eventLag.Set(max(0, h.cfg.Now().Sub(ev.Time).Seconds()))
	h.metrics.events.WithLabelValues(string(ev.Name)).Inc()
	h.applyEvent(ctx, ev)
	h.recent.add(ev)
	if st := kvledger.Status(ev.Status); st.Terminal() && ev.Name == kvledger.CompletedEvent {
		h.finished.add(ev.Time)
	}
	h.broker.publish(push{Type: "ledger", Data: eventJSON(ev)})
}

// applyEvent updates the view; an admission or an unknown key is read
// back from the store, since events carry no needs.
func (h *Handler) applyEvent(ctx context.Context, ev events.Event) {
	if ev.Name == deletedEvent {
		h.tasks.remove(kvledger.IdempotencyKey(ev.Key), ev.Revision)
		return
	}
	if known, _ := h.tasks.applyEvent(ev); known && ev.Name != kvledger.AdmittedEvent {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.OpTimeout)
	defer cancel()
	s, ok, err := h.ledger.State(ctx, kvledger.IdempotencyKey(ev.Key))
	if err != nil {
		h.cfg.Logger.Warn("dashboard: read record", "key", ev.Key, "err", err)
		return
	}
	if ok {
		h.tasks.put(summarize(s, h.cfg.KindOf(s)))
	}
}

// deletedEvent is the event of an operator deleting a final record.
const deletedEvent events.Name = "ledger.deleted"

// liveEvent is the JSON a browser receives for a ledger event. Ref is
// the query-escaped key (exact for any bytes); Key is its display form.
type liveEvent struct {
	Name      string `json:"name"`
	Ref       string `json:"ref"`
	Key       string `json:"key"`
	Status    string `json:"status,omitempty"`
	Owner     string `json:"owner,omitempty"`
	Fence     uint64 `json:"fence"`
	BlockedBy string `json:"blocked_by,omitempty"`
	Revision  uint64 `json:"revision"`
	Time      string `json:"time"`
}

func eventJSON(ev events.Event) []byte {
	b, _ := json.Marshal(liveEvent{Name: string(ev.Name), Ref: keyRef(ev.Key), Key: displayKey(ev.Key),
		Status: ev.Status, Owner: displayKey(ev.Owner), Fence: ev.Fence, BlockedBy: displayKey(ev.BlockedBy),
		Revision: ev.Revision, Time: ev.Time.UTC().Format(time.RFC3339Nano)})
	return b
}
