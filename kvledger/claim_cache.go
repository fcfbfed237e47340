package kvledger

import (
	"context"
	"sync"
)

// claims remembers the claimed records this Ledger wrote last, per key, so
// that the owner's next Renew, Release or Complete (usually made through
// the same Ledger right after its Claim) can skip the leader read: it
// compare-and-swaps against the remembered revision directly. This is
// only sound on a store whose Rev names one stored version for ever (the
// KVStore: a KV revision is never reused in a bucket), so that a swap that
// succeeds proves the remembered record was the stored one, exactly as if
// it had just been loaded.
//
// The remembered record is used only when it passes the caller's checks
// (claimed, the caller's fence). Every error is decided on a freshly
// loaded record, and a lost swap drops the entry and loads, so what a
// caller sees is what the load-first path gives; only the read is saved.
// The map is bounded: when full it forgets everything.
type claims struct {
	mu  sync.Mutex
	rec map[IdempotencyKey]TaskState
}

const claimsMax = 1 << 14

// UniqueRevisions is an optional Store capability, a promise with no
// behaviour: the store never gives two stored versions of a key the same
// Rev, also across deletion and re-admission (the KVStore: a KV revision
// is never reused in a bucket). A Ledger on such a store remembers the
// claims it wrote and compare-and-swaps Renew, Release and Complete
// against them without reading first (see claims). storetest checks the
// promise as far as it can see.
type UniqueRevisions interface {
	UniqueRevisions()
}

// UniqueRevisions implements UniqueRevisions.
func (*KVStore) UniqueRevisions() {}

// note records rec, the result of a successful write by this Ledger.
func (c *claims) note(rec TaskState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec.Status != StatusClaimed {
		delete(c.rec, rec.Key)
		return
	}
	if c.rec == nil || len(c.rec) >= claimsMax {
		c.rec = make(map[IdempotencyKey]TaskState)
	}
	c.rec[rec.Key] = rec.clone()
}

func (c *claims) forget(key IdempotencyKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rec, key)
}

// owned returns the remembered claim of key when it is owner's claim
// at fence.
func (c *claims) owned(key IdempotencyKey, owner OwnerID, fence FenceToken) (TaskState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.rec[key]
	if !ok || r.Status != StatusClaimed || r.Fence != fence || r.Owner != owner {
		return TaskState{}, false
	}
	return r.clone(), true
}

// loadClaim is the start of Renew, Release and Complete (and the
// runtime's outcome): the caller's claim of key, checked in the seed
// ledger's order for the call (see checkClaim) on the stored record, so
// every store reports the same error for the same record.
//
// The remembered claim is used only when it passes every check (it is
// the caller's, at the caller's fence); any error is decided on the
// stored record, which another Ledger may have finished since: the
// remembered one would call that ErrFenced for another owner.
func (l *Ledger) loadClaim(ctx context.Context, key IdempotencyKey, owner OwnerID, fence FenceToken, order claimOrder) (TaskState, error) {
	if l.remember {
		if r, ok := l.claims.owned(key, owner, fence); ok {
			return r, nil
		}
	}
	cur, err := l.load(ctx, key)
	if err != nil {
		return TaskState{}, err
	}
	if err := checkClaim(cur, owner, fence, order); err != nil {
		return TaskState{}, err
	}
	return cur, nil
}
