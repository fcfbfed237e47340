package kvledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/natscoord/natscoord/internal/kvx"
)

// A paused kind is a record in the ledger bucket beside the tasks and the
// schedules:
//
//	ctl.pause.<kind>   a Pause (JSON, below); <kind> escaped with kvx.EncodeToken
//
// Pausing creates it, resuming deletes it, each a compare-and-set (create
// if absent, delete at the revision read), so a kind nobody paused costs
// no key and no write. The store's one record watch covers these keys
// (newRecordHub), so every worker learns of a pause or a resume by push,
// in the same ordered stream as the records (WatchRecordsAndControls).
const pausePrefix = "ctl.pause."

// pauseFormat is the version a stored pause carries in "v".
const pauseFormat = 1

func pauseKey(kind string) string { return pausePrefix + kvx.EncodeToken(kind) }

// Pause is a paused task kind: workers start none of its ready tasks
// until it is resumed. Tasks of the kind already running finish; tasks
// are still admitted, and wait.
type Pause struct {
	// Kind is the paused kind (1 to MaxKindBytes of UTF-8).
	Kind string
	// Schedules pauses the kind's schedules too: while it is set, workers
	// admit no period of a schedule of the kind (a period that passes is
	// skipped, not admitted on resume). Default false: schedules keep
	// admitting, and their tasks wait like any other.
	Schedules bool
	// Actor paused it; At is when (as its writer's clock said; zero when
	// not given).
	Actor Actor
	At    time.Time
	// Rev is the pause's revision in the bucket (not stored).
	Rev uint64
}

// Pause errors. Match them with errors.Is; nothing was written.
var (
	// ErrPaused: PauseKind found the kind paused already.
	ErrPaused = errors.New("kvledger: kind is paused already")
	// ErrNotPaused: ResumeKind found the kind not paused.
	ErrNotPaused = errors.New("kvledger: kind is not paused")
	// ErrInvalidPause: an empty kind, or one longer than MaxKindBytes or
	// not UTF-8.
	ErrInvalidPause = errors.New("kvledger: invalid pause")
)

type pauseWire struct {
	V         int       `json:"v"`
	Kind      string    `json:"kind"`
	Schedules bool      `json:"schedules,omitempty"`
	Actor     Actor     `json:"actor,omitempty"`
	At        time.Time `json:"at,omitzero"`
}

func checkPauseKind(kind string) error {
	if kind == "" || len(kind) > MaxKindBytes || !utf8.ValidString(kind) {
		return fmt.Errorf("%w: kind %q is not 1 to %d bytes of UTF-8", ErrInvalidPause, kind, MaxKindBytes)
	}
	return nil
}

func encodePause(p Pause) ([]byte, error) {
	b, err := json.Marshal(pauseWire{V: pauseFormat, Kind: p.Kind, Schedules: p.Schedules, Actor: p.Actor, At: p.At.UTC()})
	if err != nil {
		return nil, fmt.Errorf("kvledger: pause %q: %w", p.Kind, err)
	}
	return b, nil
}

func decodePause(kind string, value []byte, rev uint64) (Pause, error) {
	var w pauseWire
	if err := json.Unmarshal(value, &w); err != nil {
		return Pause{}, fmt.Errorf("%w: pause of %q revision %d: %v", ErrCorruptRecord, kind, rev, err)
	}
	if w.V != pauseFormat || w.Kind != kind {
		return Pause{}, fmt.Errorf("%w: pause of %q revision %d: format %d of kind %q", ErrCorruptRecord, kind, rev, w.V, w.Kind)
	}
	return Pause{Kind: w.Kind, Schedules: w.Schedules, Actor: w.Actor, At: w.At, Rev: rev}, nil
}

// PauseKind pauses p.Kind: it creates the kind's pause record if absent
// (ErrPaused when the kind is paused already) and returns it as stored.
// Every worker of the ledger stops starting the kind's ready tasks as its
// watch delivers the record.
func (s *KVStore) PauseKind(ctx context.Context, p Pause) (Pause, error) {
	if err := checkPauseKind(p.Kind); err != nil {
		return Pause{}, err
	}
	value, err := encodePause(p)
	if err != nil {
		return Pause{}, err
	}
	key := pauseKey(p.Kind)
	if len(key) > s.b.MaxKeyBytes() {
		return Pause{}, fmt.Errorf("%w: kind %q: the key is %d bytes once escaped, the limit is %d", ErrInvalidPause, p.Kind, len(key), s.b.MaxKeyBytes())
	}
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	rev, _, err := s.b.Acquire(octx, key, value, 0, 0)
	if kvx.IsConflict(err) {
		return Pause{}, fmt.Errorf("%w: %q", ErrPaused, p.Kind)
	}
	if err != nil {
		return Pause{}, fmt.Errorf("kvledger: pause %q: %w", p.Kind, closedErr(err))
	}
	p.Rev, p.At = rev, p.At.UTC()
	return p, nil
}

// ResumeKind resumes kind: it deletes the kind's pause record at rev, the
// revision it was read at (0: the revision ResumeKind reads first).
// ErrNotPaused when the kind is not paused, ErrMoved (as an action bound
// by AtRevision) when the record is no longer at rev. Every worker starts the kind's ready tasks
// as its watch delivers the deletion.
func (s *KVStore) ResumeKind(ctx context.Context, kind string, rev uint64) error {
	if err := checkPauseKind(kind); err != nil {
		return err
	}
	if rev == 0 {
		p, found, err := s.LoadPause(ctx, kind)
		if err != nil && !errors.Is(err, ErrCorruptRecord) {
			return err
		}
		if !found {
			return fmt.Errorf("%w: %q", ErrNotPaused, kind)
		}
		rev = p.Rev
	}
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	_, err := s.b.Delete(octx, pauseKey(kind), rev)
	if kvx.IsConflict(err) {
		if _, found, lerr := s.LoadPause(ctx, kind); lerr == nil && !found {
			return fmt.Errorf("%w: %q", ErrNotPaused, kind)
		}
		return fmt.Errorf("%w: pause of %q is no longer at revision %d", ErrMoved, kind, rev)
	}
	if err != nil {
		return fmt.Errorf("kvledger: resume %q: %w", kind, closedErr(err))
	}
	return nil
}

// LoadPause reads the pause of kind from the stream leader. A stored
// value that is not a pause is ErrCorruptRecord, returned with found
// true and the revision to resume it at.
func (s *KVStore) LoadPause(ctx context.Context, kind string) (Pause, bool, error) {
	if checkPauseKind(kind) != nil {
		return Pause{}, false, nil
	}
	octx, cancel := s.ops.Bound(ctx)
	e, err := s.b.Get(octx, pauseKey(kind))
	cancel()
	if errors.Is(err, kvx.ErrNotFound) {
		return Pause{}, false, nil
	}
	if err != nil {
		return Pause{}, false, fmt.Errorf("kvledger: load pause %q: %w", kind, err)
	}
	p, err := decodePause(kind, e.Value, e.Revision)
	if err != nil {
		return Pause{Kind: kind, Rev: e.Revision}, true, err
	}
	return p, true, nil
}

// Pauses returns every paused kind, by kind. A stored value that is not a
// pause does not hide the others: they are returned with an error
// matching ErrCorruptRecord.
func (s *KVStore) Pauses(ctx context.Context) ([]Pause, error) {
	return scanStored(ctx, s.b, pausePrefix, "pauses", func(e kvx.Entry) (Pause, string, bool, error) {
		c := pauseChangeOf(e)
		return c.Pause, c.Kind, c.Paused, c.Err
	})
}

// PauseChange is one change of a kind's pause delivered by
// WatchRecordsAndControls: Paused with the record, or resumed.
type PauseChange struct {
	// Kind is the kind (empty when the key does not decode).
	Kind string
	// Pause is the stored pause when Paused.
	Pause Pause
	// Paused reports that the kind is paused; false: resumed (the record
	// was deleted).
	Paused bool
	// Rev is the revision of the change.
	Rev uint64
	// Err is set (matching ErrCorruptRecord) when the stored value is not
	// a valid pause. The kind is then reported paused: a value someone
	// wrote under the key is taken as a pause whose options are unknown.
	Err error
}

func pauseChangeOf(e kvx.Entry) PauseChange {
	kind, err := keyToken(e.Key, pausePrefix, "pause")
	if err != nil {
		return PauseChange{Rev: e.Revision, Err: err}
	}
	c := PauseChange{Kind: kind, Rev: e.Revision}
	if !e.Live() {
		return c
	}
	c.Paused = true
	c.Pause, c.Err = decodePause(kind, e.Value, e.Revision)
	if c.Err != nil {
		c.Pause = Pause{Kind: kind, Rev: e.Revision}
	}
	return c
}
