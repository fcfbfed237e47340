package events

import "fmt"

// reader takes one stored write of a Source to the event its handler is
// given: the write's key, its gap (reported before the write), the name
// and status filter (headers, before the body is decoded), the decoder and
// the event filter. SubscribeLive and SubscribeDurable read every write
// through it, so both consumers apply the same steps in the same order.
type reader struct {
	src    Source
	filter Filter
	gaps   *gapTracker
	onGap  func(Gap)
	report func(error)
}

// gapHandler is what a consumer does with a gap: onGap, or, when nil,
// report it as an error.
func gapHandler(onGap func(Gap), report func(error)) func(Gap) {
	if onGap != nil {
		return onGap
	}
	return func(g Gap) { report(g) }
}

// newReader returns the reader of src's writes; onGap is called for each
// gap (gapHandler).
func newReader(src Source, filter Filter, start uint64, onGap func(Gap), report func(error)) *reader {
	return &reader{src: src, filter: filter, gaps: newGapTracker(start, src.PrevHeader), onGap: onGap, report: report}
}

// readOutcome is what read made of a write.
type readOutcome int

const (
	// readSkipped: not the handler's (not a key of the source, filtered
	// out, or naming no transition).
	readSkipped readOutcome = iota
	// readBroken: the write did not decode; the error was reported.
	readBroken
	// readEvent: the handler is given the event.
	readEvent
)

// read takes m (Subject its stored subject, Revision its stream sequence)
// through the steps.
func (r *reader) read(m Msg) (Event, readOutcome) {
	key, ok := r.src.KeyOf(m.Subject)
	if !ok || m.Revision == 0 {
		return Event{}, readSkipped
	}
	if g, ok := r.gaps.see(r.src.Name, key, m.Revision, m.Header); ok {
		r.onGap(g)
	}
	if !r.filter.wantHeader(m.Header, r.src) {
		return Event{}, readSkipped
	}
	e, ok, err := r.src.Decode(m)
	if err != nil {
		r.report(fmt.Errorf("events: %s revision %d: %w", m.Subject, m.Revision, err))
		return Event{}, readBroken
	}
	if !ok || !r.filter.wantEvent(e) {
		return Event{}, readSkipped
	}
	return e, readEvent
}
