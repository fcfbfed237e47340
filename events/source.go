package events

import (
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
)

// Headers the server sets on a republished message (ADR-28).
const (
	hdrSubject   = "Nats-Subject"
	hdrSequence  = "Nats-Sequence"
	hdrTimeStamp = "Nats-Time-Stamp"
)

// Msg is one stored write as a consumer receives it: from a consumer of
// the stream, or republished on the live subjects (then Subject is the
// stored subject, from the Nats-Subject header).
type Msg struct {
	// Subject is the subject the write was stored on.
	Subject string
	// Header holds the write's stored headers.
	Header nats.Header
	// Data is the stored value.
	Data []byte
	// Revision is the write's stream sequence.
	Revision uint64
	// Time is when the server stored it.
	Time time.Time
}

// Source describes where a writer's events live and how they read. The
// package that owns the stored format builds it (kvledger.EventSource):
// this package never reads the format itself.
type Source struct {
	// Name is the writer's name, every event's Source (the ledger's
	// bucket).
	Name string
	// Stream is the stream whose stored writes are the events.
	Stream string
	// Subject is the stream subject of every event ("$KV.<b>.task.>").
	Subject string
	// KeySubject maps a key to the stream subject of its writes.
	KeySubject func(key string) string
	// Live is the core subject the stream republishes every write on.
	Live string
	// LiveKeySubject maps a key to its live subject.
	LiveKeySubject func(key string) string
	// NameHeader is the header naming each write's transition, read
	// before any body is decoded (a filter by transition costs no
	// decoding).
	NameHeader string
	// StatusHeader is the header holding the record's status after the
	// write, read before the body is decoded for Filter.Statuses
	// (optional: without it the status is judged on the decoded event).
	StatusHeader string
	// Renamed maps names the writer once wrote to the names the same
	// transitions have now (optional). A name header is read through it
	// before the filter judges it, so a filter on today's name also picks
	// the writes stored under the old one; Decode names them the same.
	Renamed map[Name]Name
	// PrevHeader is the header holding the key's previous revision.
	PrevHeader string
	// KeyOf returns the key a stream subject belongs to; ok false for a
	// subject that holds no events (skipped).
	KeyOf func(subject string) (key string, ok bool)
	// Decode turns one stored write into its Event. ok false: the
	// message is not an event (not a task write) and is skipped.
	Decode func(Msg) (e Event, ok bool, err error)
}

func (s Source) valid() bool {
	return s.Name != "" && s.Stream != "" && s.Subject != "" && s.KeySubject != nil && s.Live != "" &&
		s.LiveKeySubject != nil && s.NameHeader != "" && s.KeyOf != nil && s.Decode != nil
}

// Filter selects events: by key (a subject filter, so the server sends
// only that key's writes), by name (the NameHeader) and by the record's
// status after the write (the StatusHeader), both read before the body
// is decoded. An event must pass each one that is set. Empty: everything.
//
// Names and Statuses together pick one outcome of a transition: a
// ledger's failed completions are Names kvledger.CompletedEvent with
// Statuses "failed"; Statuses "failed" alone is every write that leaves
// a record failed (a failed completion, a cancellation).
type Filter struct {
	Keys     []string
	Names    []Name
	Statuses []string
}

// wantHeader judges a write by its name and status headers before its
// body is decoded. A header the write lacks (the server's own markers: an
// expiry, a purge; a write stored before its writer set the status
// header) lets it through to be judged on the decoded event (wantEvent).
func (f Filter) wantHeader(h nats.Header, src Source) bool {
	if n := Name(h.Get(src.NameHeader)); n != "" && !f.wantsName(src.rename(n)) {
		return false
	}
	if src.StatusHeader == "" {
		return true
	}
	st := h.Get(src.StatusHeader)
	return st == "" || f.wantsStatus(st)
}

// wantEvent judges a decoded event by its name and status.
func (f Filter) wantEvent(e Event) bool { return f.wantsName(e.Name) && f.wantsStatus(e.Status) }

func (f Filter) wantsName(n Name) bool { return len(f.Names) == 0 || slices.Contains(f.Names, n) }

func (f Filter) wantsStatus(st string) bool {
	return len(f.Statuses) == 0 || slices.Contains(f.Statuses, st)
}

// checkFilter refuses a filter naming a name the source no longer writes
// (a key of Renamed): its writes are read under their name of today, so
// such a filter would match nothing, silently.
func (s Source) checkFilter(f Filter) error {
	for _, n := range f.Names {
		if c, ok := s.Renamed[n]; ok {
			return fmt.Errorf("%w: %s writes no %q any more: those writes are %q now (filter on the status as well to pick an outcome)",
				ErrInvalidConfig, s.Name, string(n), string(c))
		}
	}
	return nil
}

// rename is n as the source names it now (Renamed).
func (s Source) rename(n Name) Name {
	if c, ok := s.Renamed[n]; ok {
		return c
	}
	return n
}
