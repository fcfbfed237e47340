package events

import (
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
// only that key's writes) and by name (the NameHeader, read before the
// body is decoded). Empty: everything.
type Filter struct {
	Keys  []string
	Names []Name
}

// wantName judges a write by its name header before its body is
// decoded. A write without the header (the server's own markers: an
// expiry, a purge) is let through to be judged by its decoded name
// (wantEvent).
func (f Filter) wantName(h nats.Header, header string) bool {
	n := Name(h.Get(header))
	return n == "" || f.wants(n)
}

// wantEvent judges a decoded event by its name.
func (f Filter) wantEvent(e Event) bool { return f.wants(e.Name) }

func (f Filter) wants(n Name) bool {
	if len(f.Names) == 0 {
		return true
	}
	for _, w := range f.Names {
		if w == n {
			return true
		}
	}
	return false
}
