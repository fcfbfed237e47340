package kvledger

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/kvx"
)

// EventHeader is the header every record write carries, naming its
// transition (one of EventNames), so a consumer filters by transition
// without decoding the record. The key is a subject token instead
// ($KV.<bucket>.task.<key>; ledger.<bucket>.<key> on the live feed), so
// following one key is a subject filter. See "Events" in doc.go.
const EventHeader = "Ledger-Event"

// StatusHeader is the header every record write carries beside
// EventHeader: the record's status after the write, so a consumer picks
// failures (a CompletedEvent whose record failed, a CancelledEvent) by
// header too, without decoding the record (events.Filter.Statuses). A
// delete marker carries none.
const StatusHeader = "Ledger-Status"

// EventHistory is how many writes of one key a ledger bucket keeps: the
// most the KV API allows. A consumer that falls further behind on a key
// is told of a gap (events.Gap).
const EventHistory = 64

// liveRoot is the first token of the live feed's subjects.
const liveRoot = "ledger."

// LiveSubject is the subject the bucket's stream republishes every record
// write on, for `nats sub`: "ledger.<bucket>.>" (one more token, the
// key's, per task). At most once: see "Events" in doc.go.
func LiveSubject(bucket string) string { return liveRoot + bucket + ".>" }

// rePublish is the RePublish of a ledger bucket: its task writes, to the
// live subjects.
func rePublish(bucket string) *jetstream.RePublish {
	return &jetstream.RePublish{Source: "$KV." + bucket + "." + taskPrefix + ">", Destination: LiveSubject(bucket)}
}

// writeHeaders returns the headers of a record write: its transition's
// name (RestoredEvent for a record that names none: Restore's writes),
// the record's status, and with rollup a subject rollup (a final write
// under a retention: see "Retention" in doc.go).
//
// The headers of a write without rollup are one shared map per event
// name and status, built once (eventHeaders): every kvx write path copies
// the headers it is given before adding its own (withHeaders, and
// newOutMsg for the compare-and-sets), so none writes to them, and a
// write costs no map of its own here.
func writeHeaders(rec TaskState, rollup bool) nats.Header {
	name := eventName(rec)
	if h, ok := eventHeaders[eventKind{name, rec.Status}]; ok && !rollup {
		return h
	}
	h := nats.Header{EventHeader: []string{string(name)}, StatusHeader: []string{string(rec.Status)}}
	if rollup {
		h[jetstream.MsgRollup] = []string{jetstream.MsgRollupSubject}
	}
	return h
}

// eventKind is a write's event name and the status it leaves.
type eventKind struct {
	name   events.Name
	status Status
}

// eventHeaders is writeHeaders' shared, read-only header of each of
// EventNames with each of Statuses.
var eventHeaders = func() map[eventKind]nats.Header {
	m := make(map[eventKind]nats.Header, len(EventNames)*len(Statuses))
	for _, n := range EventNames {
		for _, st := range Statuses {
			m[eventKind{n, st}] = nats.Header{EventHeader: []string{string(n)}, StatusHeader: []string{string(st)}}
		}
	}
	return m
}()

// EventSource describes the events of the ledger in bucket for package
// events (SubscribeDurable, SubscribeLive): the bucket's stream, its task
// subjects, the live feed and the decoder of its writes (DecodeEvent).
func EventSource(bucket string) events.Source {
	return events.Source{
		Name:           bucket,
		Stream:         "KV_" + bucket,
		Subject:        "$KV." + bucket + "." + taskPrefix + ">",
		KeySubject:     func(k string) string { return "$KV." + bucket + "." + taskKey(IdempotencyKey(k)) },
		Live:           LiveSubject(bucket),
		LiveKeySubject: func(k string) string { return liveRoot + bucket + "." + kvx.EncodeToken(k) },
		NameHeader:     EventHeader,
		StatusHeader:   StatusHeader,
		Renamed:        maps.Clone(renamedEvents),
		PrevHeader:     jetstream.ExpectedLastSubjSeqHeader,
		KeyOf: func(subject string) (string, bool) {
			_, key, err := parseEventSubject(subject)
			return string(key), err == nil
		},
		Decode: DecodeEvent,
	}
}

// parseEventSubject reads bucket and key from a task record's stream
// subject "$KV.<bucket>.task.<token>".
func parseEventSubject(subject string) (string, IdempotencyKey, error) {
	rest, ok := strings.CutPrefix(subject, "$KV.")
	bucket, bkey, found := strings.Cut(rest, ".")
	if !ok || !found || bucket == "" {
		return "", "", fmt.Errorf("%w: %q is not a ledger record subject", ErrCorruptRecord, subject)
	}
	key, err := keyOfTask(bkey)
	return bucket, key, err
}

// DecodeEvent turns one stored write of a ledger bucket (m.Subject its
// stream subject) into its event: the record's fields after the write,
// the transition named by EventHeader (the record's last_event when the
// header is missing; a name an earlier version wrote reads as the
// transition's name today, so an old failed Complete, "ledger.failed", is
// CompletedEvent with status failed), PrevRevision from the write's
// Nats-Expected-Last-Subject-Sequence. A delete marker is DeletedEvent,
// a marker the server wrote (a retention's expiry) ExpiredEvent; neither
// carries a status. ok is false for a write that names no transition.
func DecodeEvent(m events.Msg) (events.Event, bool, error) {
	bucket, key, err := parseEventSubject(m.Subject)
	if err != nil {
		return events.Event{}, false, err
	}
	prev, _ := strconv.ParseUint(m.Header.Get(jetstream.ExpectedLastSubjSeqHeader), 10, 64)
	name := currentEvent(events.Name(m.Header.Get(EventHeader)))
	if op := kvx.OpOf(m.Header); op != kvx.OpPut {
		if name == "" {
			name = DeletedEvent
			if op == kvx.OpExpired {
				name = ExpiredEvent
			}
		}
		return events.Event{Name: name, Source: bucket, Key: string(key), Revision: m.Revision, PrevRevision: prev, Time: m.Time}, true, nil
	}
	rec, err := decodeRecord(key, m.Data, m.Revision)
	if err != nil {
		return events.Event{}, false, err
	}
	if name == "" {
		name = rec.LastEvent
	}
	if name == "" {
		return events.Event{}, false, nil
	}
	e := EventOf(bucket, rec)
	e.Name, e.PrevRevision = name, prev
	return e, true, nil
}

// EventOf returns the event of the stored record rec in the ledger named
// source: its fields after the write, named by its LastEvent.
func EventOf(source string, rec TaskState) events.Event {
	return events.Event{
		Name:        rec.LastEvent,
		Source:      source,
		Key:         string(rec.Key),
		Revision:    rec.Rev,
		Status:      string(rec.Status),
		Actor:       string(rec.UpdatedBy),
		Owner:       string(rec.Owner),
		Fence:       uint64(rec.Fence),
		BlockedBy:   string(rec.BlockedBy),
		Time:        rec.UpdatedAt,
		Kind:        rec.Kind,
		Attempts:    rec.Attempts,
		MaxAttempts: rec.MaxAttempts,
		LastError:   rec.LastError,
		RunAt:       rec.RunAt,
		Cancelled:   rec.Cancelled,
	}
}

// EventLog is an optional Store capability: the store keeps each key's
// writes as its events (both stores here do). KeyEvents returns the
// writes of key the store still holds, oldest first.
type EventLog interface {
	KeyEvents(ctx context.Context, key IdempotencyKey) ([]events.Event, error)
}

var _ EventLog = (*KVStore)(nil)

// KeyEvents implements EventLog: the key's writes the bucket's stream
// still holds (up to EventHistory, fewer after a retention's rollup).
func (s *KVStore) KeyEvents(ctx context.Context, key IdempotencyKey) ([]events.Event, error) {
	var (
		out  []events.Event
		derr error
	)
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	err := s.b.History(octx, taskKey(key), func(m kvx.Stored) bool {
		e, ok, err := DecodeEvent(events.Msg{Subject: m.Subject, Header: m.Header, Data: m.Value, Revision: m.Revision, Time: m.Created})
		if err != nil {
			derr = err
			return false
		}
		if ok {
			out = append(out, e)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("kvledger: events of %q: %w", string(key), err)
	}
	return out, derr
}

// EventSource returns the bucket's events.Source (EventSource).
func (s *KVStore) EventSource() events.Source { return EventSource(s.b.Name()) }

// KeyEvents returns key's events the ledger's store still holds, oldest
// first (ErrNoEventLog when the store keeps none).
func (l *Ledger) KeyEvents(ctx context.Context, key IdempotencyKey) ([]events.Event, error) {
	el, ok := l.store.(EventLog)
	if !ok {
		return nil, ErrNoEventLog
	}
	return el.KeyEvents(ctx, key)
}
