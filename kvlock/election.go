package kvlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// Election is one candidate in a leader election: a lock whose holder is
// the leader, plus a value the leader publishes (its address, say). Use
// one Election per candidate; its methods are safe for concurrent use.
//
// The leader's term is its lock's fencing token, so followers and
// resources can refuse a deposed leader's writes. The value lives in a
// record next to the lock, written by a guarded write that the server
// accepts only while the leader's lease is at its current revision, and
// naming the lease's owner: readers trust a record only while the live
// lease names the same owner, so a deposed leader's record is never
// reported as the current one.
type Election struct {
	l     *Locker
	name  string
	s     spec
	value string // bucket key of the value record

	mu          sync.Mutex
	campaigning bool
	lock        *Lock
	recRev      uint64 // revision of the value record this candidate last wrote
}

// LeaderInfo describes the current leader.
type LeaderInfo struct {
	// Value is what the leader published (Campaign, Proclaim).
	Value string
	// Term is the leader's fencing token: it grows with every new leader.
	Term uint64
	// Holder is the leader's public holder id (Config.Holder).
	Holder string
}

// LeaderEvent is one change seen by Observe: a (new) leader or a new value
// of the same leader, or a vacancy.
type LeaderEvent struct {
	// Vacant is true when the election has no leader; Info is then zero.
	Vacant bool
	Info   LeaderInfo
}

// record is the stored value record.
type record struct {
	Value  string `json:"value"`
	Term   uint64 `json:"term"`
	Holder string `json:"holder"`
	Owner  string `json:"owner"` // the lease's owner hash when written
}

// NewElection returns a candidate for the election called name (any
// non-empty string; it is escaped into one key token) on l. Elections
// share l's TTL, renew interval and fairness: with Config.Fair candidates
// become leader in the order they campaigned.
func NewElection(l *Locker, name string) (*Election, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: nil Locker", ErrInvalidConfig)
	}
	tok := kvx.EncodeToken(name)
	if name == "" || len(tok) > MaxKeyBytes {
		return nil, fmt.Errorf("%w: election name must be 1..%d bytes once escaped, got %d", ErrInvalidKey, MaxKeyBytes, len(tok))
	}
	return &Election{l: l, name: name, s: electionSpec(l.cfg.Name, tok, name), value: electionValueKey(l.cfg.Name, tok)}, nil
}

// Name returns the election's name.
func (e *Election) Name() string { return e.name }

// Campaign blocks until this candidate is the leader (or ctx ends), then
// publishes value and returns. Leadership lasts until Resign, the Locker's
// Close, or the loss of the lease (a renewal finding it taken, or its
// validity window running out): Done is then closed at once, before anyone
// else can be elected. ctx bounds only the campaign.
func (e *Election) Campaign(ctx context.Context, value string) error {
	e.mu.Lock()
	if e.campaigning || e.lock != nil && e.lock.Err() == nil {
		e.mu.Unlock()
		return ErrCampaigning
	}
	e.campaigning = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.campaigning = false
		e.mu.Unlock()
	}()
	k, err := e.l.acquire(ctx, e.s, true)
	if err != nil {
		return err
	}
	if err := k.keep(); err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), e.l.cfg.OpTimeout)
		defer cancel()
		_ = k.Release(rctx)
		return err
	}
	rev, err := e.put(ctx, k, value)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.Background(), e.l.cfg.OpTimeout)
		defer cancel()
		_ = k.Release(rctx)
		return err
	}
	e.mu.Lock()
	e.lock, e.recRev = k, rev
	e.mu.Unlock()
	// However leadership ends (loss, the Locker's Close), the record of
	// this term goes with it. Resign has removed it already.
	k.g.AfterEnd(func() { e.ended(k) })
	return nil
}

// ended removes the value record of the term k held, unless Resign or a
// new Campaign has taken over since.
func (e *Election) ended(k *Lock) {
	e.mu.Lock()
	rev := e.recRev
	mine := e.lock == k
	if mine {
		e.recRev = 0
	}
	e.mu.Unlock()
	if mine && rev != 0 {
		e.dropRecord(context.Background(), rev)
	}
}

// put writes the value record, fenced by k's lease, and returns the
// record's revision.
func (e *Election) put(ctx context.Context, k *Lock, value string) (uint64, error) {
	b, err := json.Marshal(record{Value: value, Term: k.Token(), Holder: e.l.m.Holder(), Owner: k.g.OwnerHash()})
	if err != nil {
		return 0, fmt.Errorf("kvlock: election record: %w", err)
	}
	var rev uint64
	err = e.l.retry(ctx, notSent, func() error {
		var err error
		rev, err = k.g.Proof().Put(ctx, e.value, b)
		return err
	})
	if errors.Is(err, kvlease.ErrLost) {
		return 0, fmt.Errorf("%w: %w", ErrNotLeader, mapErr(err))
	}
	if err != nil {
		return 0, fmt.Errorf("kvlock: election %q: publishing value: %w", e.name, err)
	}
	return rev, nil
}

// recordMarkerTTL is the lifetime of the delete marker Resign leaves on the
// value record: once it expires (and the server's own expiry marker after
// it) the record's key is gone from the bucket.
const recordMarkerTTL = time.Second

// dropRecord deletes the value record this candidate wrote at rev, only
// while it is still at that revision: a successor's record is never
// removed. Failure is logged, not returned: readers ignore a record whose
// owner does not hold the lease, so a leftover is stale, never wrong.
func (e *Election) dropRecord(ctx context.Context, rev uint64) {
	if _, err := e.l.m.DeleteKeyAt(ctx, e.value, rev, recordMarkerTTL); err != nil {
		e.l.log.Debug("kvlock: removing election record", "election", e.name, "err", err)
	}
}

func (e *Election) leading() (*Lock, error) {
	e.mu.Lock()
	k := e.lock
	e.mu.Unlock()
	if k == nil {
		return nil, ErrNotLeader
	}
	if err := k.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	return k, nil
}

// Proclaim publishes a new value without giving up leadership. The write
// is fenced: it lands only while this candidate's lease is current, and a
// refused write means leadership was lost (ErrNotLeader, ErrLost).
func (e *Election) Proclaim(ctx context.Context, value string) error {
	k, err := e.leading()
	if err != nil {
		return err
	}
	rev, err := e.put(ctx, k, value)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.lock == k {
		e.recRev = rev
	}
	e.mu.Unlock()
	return nil
}

// Resign gives up leadership: the value record is removed (only while it
// is still this candidate's), then the lease is deleted
// (owner-conditionally), so the next candidate is elected at once and no
// record of the ended term stays in the bucket. It returns ErrNotLeader
// when this candidate does not lead.
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	k, rev := e.lock, e.recRev
	e.lock, e.recRev = nil, 0
	e.mu.Unlock()
	if k == nil {
		return ErrNotLeader
	}
	if k.Err() == nil {
		e.dropRecord(ctx, rev)
	}
	return k.Release(ctx)
}

// Term returns this candidate's term while it leads, else 0.
func (e *Election) Term() uint64 {
	k, err := e.leading()
	if err != nil {
		return 0
	}
	return k.Token()
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Done is closed when this candidate's leadership ends (resigned, lost or
// closed); it is already closed when the candidate does not lead.
func (e *Election) Done() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock == nil {
		return closedChan
	}
	return e.lock.Done()
}

// Context returns the leadership's context: it carries the term
// (TokenFromContext) and is cancelled, with ErrLost or ErrReleased as its
// cause, when leadership ends. It is nil when the candidate does not lead.
func (e *Election) Context() context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lock == nil {
		return nil
	}
	return e.lock.Context()
}

// Leader reads the current leader from the stream leader. It returns
// ErrNoLeader when the lease is vacant, or when its holder has not yet
// published its value (a campaign that is just finishing).
func (e *Election) Leader(ctx context.Context) (LeaderInfo, error) {
	h, held, err := e.l.m.HolderOfKey(ctx, e.s.lease)
	if err != nil && held {
		// A lease value that does not decode names no owner a record
		// could match: no leader can be reported.
		return LeaderInfo{}, fmt.Errorf("%w: election %q: %w", ErrNoLeader, e.name, err)
	}
	if err != nil {
		return LeaderInfo{}, fmt.Errorf("kvlock: election %q: %w", e.name, err)
	}
	if !held {
		return LeaderInfo{}, fmt.Errorf("%w: election %q is vacant", ErrNoLeader, e.name)
	}
	v, _, ok, err := e.l.m.ReadKey(ctx, e.value)
	if err != nil {
		return LeaderInfo{}, fmt.Errorf("kvlock: election %q: %w", e.name, err)
	}
	info, ok := currentOf(h, v, ok)
	if !ok {
		return LeaderInfo{}, fmt.Errorf("%w: election %q has a winner that has not published its value yet", ErrNoLeader, e.name)
	}
	return info, nil
}

// current decides the leader from the lease entry and the value record:
// the record counts only while the live lease names the record's owner.
func current(lease, value kvx.Entry) (LeaderInfo, bool) {
	if !present(lease) {
		return LeaderInfo{}, false
	}
	h, err := kvlease.DecodeHolder(lease.Value)
	if err != nil {
		return LeaderInfo{}, false
	}
	return currentOf(h, value.Value, present(value))
}

// currentOf is current for a decoded lease holder and the record's bytes
// (ok: the record exists).
func currentOf(h kvlease.Holder, value []byte, ok bool) (LeaderInfo, bool) {
	var r record
	if !ok || json.Unmarshal(value, &r) != nil {
		return LeaderInfo{}, false
	}
	if h.OwnerHash == "" || h.OwnerHash != r.Owner {
		return LeaderInfo{}, false
	}
	return LeaderInfo{Value: r.Value, Term: r.Term, Holder: r.Holder}, true
}

// present reports whether e is a live value that was actually read (the
// zero Entry, "never seen", is not).
func present(e kvx.Entry) bool { return e.Revision != 0 && e.Live() }
