package chaos

import (
	"context"
	"fmt"
	"sync"
)

// Resource stands for an external system protected by a lock: it accepts a
// write only when the write's fence token is at least the highest token it
// has accepted ("accept f >= highest"), which is what a fenced resource
// must do to exclude stale holders.
//
// It also checks the properties the lock must give it, and records every
// breach as a violation:
//   - one token, one holder: two different holders never present the same
//     token (two ownership intervals with one fence would defeat fencing);
//   - no overlap: a write whose holder still believed itself the owner
//     (its check returned nil, evaluated under the resource's lock) is never
//     refused. A refusal would mean a newer holder had already written while
//     the older one was still inside its validity window: two critical
//     sections overlapping in real time;
//   - monotonic acceptance: the accepted tokens never decrease.
//
// It is safe for concurrent use.
type Resource struct {
	mu         sync.Mutex
	highest    uint64
	holders    map[uint64]string
	accepted   int
	refused    int
	lastAccept uint64
	violations []string
	raised     chan struct{} // closed (and replaced) when highest rises
}

// NewResource returns an empty resource.
func NewResource() *Resource {
	return &Resource{holders: make(map[uint64]string), raised: make(chan struct{})}
}

// Write presents a write by holder carrying token. When check is non-nil
// it is called under the resource's lock first: a holder passes its own
// validity test (for example a lease guard's Err) so that the check and the
// write are one atomic step; a non-nil result skips the write and is
// returned. A nil check is a "zombie" write: a holder that stopped checking
// (paused, partitioned) and writes anyway, which the fence must refuse
// when a newer holder exists. Write reports whether the resource accepted.
func (r *Resource) Write(holder string, token uint64, check func() error) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if check != nil {
		if err := check(); err != nil {
			return false, err
		}
	}
	if prev, ok := r.holders[token]; ok && prev != holder {
		r.violate("token %d presented by %q and by %q", token, prev, holder)
	}
	r.holders[token] = holder
	if token < r.highest {
		r.refused++
		if check != nil {
			r.violate("overlap: %q still valid with token %d after a write with token %d", holder, token, r.highest)
		}
		return false, nil
	}
	if token < r.lastAccept {
		r.violate("accepted token %d after %d", token, r.lastAccept)
	}
	r.lastAccept = token
	r.accepted++
	if token > r.highest {
		r.highest = token
		close(r.raised)
		r.raised = make(chan struct{})
	}
	return true, nil
}

// WaitAbove blocks until the resource has accepted a token greater than
// token, or ctx ends (then it returns ctx's error).
func (r *Resource) WaitAbove(ctx context.Context, token uint64) error {
	for {
		r.mu.Lock()
		high, ch := r.highest, r.raised
		r.mu.Unlock()
		if high > token {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Stats is a snapshot of a resource's counters.
type Stats struct {
	Accepted   int      // writes accepted
	Refused    int      // writes refused for a stale token
	Holders    int      // distinct tokens seen (ownership intervals)
	Highest    uint64   // highest token accepted
	Violations []string // breaches of the properties listed on Resource
}

// Stats returns the resource's counters.
func (r *Resource) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Stats{
		Accepted: r.accepted, Refused: r.refused, Holders: len(r.holders),
		Highest: r.highest, Violations: append([]string(nil), r.violations...),
	}
}

func (r *Resource) violate(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}
