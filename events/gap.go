package events

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
)

// Gap reports writes of a key a subscriber will never deliver: they left
// the stream before it read them (the key was rewritten more often than
// the bucket keeps, rolled up by a purge or a retention's final write, or
// removed by the bucket's limits), or, for a live subscription, were not
// received. Writes after the gap are delivered as usual.
type Gap struct {
	// Source and Key name the key; Key is empty for a gap over the whole
	// stream (a durable consumer resuming behind the stream's first
	// message).
	Source, Key string
	// After is the last revision of the key this subscriber delivered
	// (0: none, or not known in this process).
	After uint64
	// Through is the last revision missed: every write of the key after
	// After up to and including Through was not delivered.
	Through uint64
	// Next is the revision of the write that revealed the gap (delivered
	// next).
	Next uint64
}

// Error makes a Gap an error, so a subscriber without a gap handler gets
// it through its error handler: a gap is never silent.
func (g Gap) Error() string { return g.String() }

// String says what was missed.
func (g Gap) String() string {
	if g.Key == "" {
		return fmt.Sprintf("events: gap in %s: revisions %d..%d left the stream before they were read", g.Source, g.After+1, g.Through)
	}
	if g.After == 0 { // none delivered here, or none known in this process
		return fmt.Sprintf("events: gap in %s key %q: its writes up to revision %d were not delivered (next %d)", g.Source, g.Key, g.Through, g.Next)
	}
	return fmt.Sprintf("events: gap in %s key %q: writes after revision %d through %d were not delivered (next %d)", g.Source, g.Key, g.After, g.Through, g.Next)
}

// gapMemory bounds the per-key memory of a gapTracker; past it the memory
// is reset as if the subscriber had just started at the next revision.
const gapMemory = 1 << 16

// gapTracker finds gaps from each write's previous revision. It keeps,
// per key, the last revision it saw; a key it has no memory of is judged
// against start, the first revision this subscription could deliver: a
// previous revision below it was delivered before (an earlier session of
// a durable consumer) or never will be; at or above it, it was due in
// this session and did not come.
type gapTracker struct {
	mu     sync.Mutex
	start  uint64
	last   map[string]uint64
	header string
}

func newGapTracker(start uint64, header string) *gapTracker {
	return &gapTracker{start: start, last: make(map[string]uint64), header: header}
}

// see notes the write of key at rev and returns the gap it reveals, if
// any. A write without the previous-revision header (a marker the server
// wrote) reveals none.
func (g *gapTracker) see(source, key string, rev uint64, h nats.Header) (Gap, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.start == 0 {
		g.start = rev // a live subscription starts at what it first receives
	}
	last, known := g.last[key]
	if known && rev <= last {
		return Gap{}, false // a redelivery
	}
	if !known && len(g.last) >= gapMemory {
		clear(g.last)
		g.start = rev
	}
	g.last[key] = rev
	v := h.Get(g.header)
	if v == "" {
		return Gap{}, false
	}
	prev, err := strconv.ParseUint(v, 10, 64)
	if err != nil || prev == 0 || prev >= rev {
		return Gap{}, false
	}
	switch {
	case known && prev == last:
		return Gap{}, false
	case !known && prev < g.start:
		return Gap{}, false
	}
	return Gap{Source: source, Key: key, After: last, Through: prev, Next: rev}, true
}
