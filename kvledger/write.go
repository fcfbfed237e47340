package kvledger

import (
	"context"
)

// write stores next over cur (or inserts it when !found). It returns the
// record as stored and false when the compare-and-swap lost. The write is
// the event: the store keeps it in the bucket's stream with its
// transition's name (see "Events" in doc.go), so nothing is published
// after it and a writer that dies right after its write loses nothing.
func (l *Ledger) write(ctx context.Context, cur TaskState, found bool, next TaskState) (TaskState, bool, error) {
	var old TaskState
	if found {
		old = cur
	}
	rec, ok, err := l.cas(ctx, next.Key, old, next)
	return l.swapped(next.Key, rec, ok, err)
}

// swapped is what follows every compare-and-swap of key's record, awaited
// (write) or pipelined (PendingFinish): when it failed or lost, the claim
// cache forgets key; when it landed, wrote.
func (l *Ledger) swapped(key IdempotencyKey, rec TaskState, ok bool, err error) (TaskState, bool, error) {
	if err != nil || !ok {
		if l.remember {
			l.claims.forget(key)
		}
		return rec, ok, err
	}
	return rec, true, l.wrote(rec)
}

// insert is write for a key believed absent: insert-if-absent. When the
// insert loses and the store reported the record it found (Inserter),
// that record comes back with found true; otherwise the caller must load
// the key.
func (l *Ledger) insert(ctx context.Context, next TaskState) (rec TaskState, ok bool, cur TaskState, found bool, err error) {
	if ins, isIns := l.store.(Inserter); isIns {
		rec, ok, cur, found, err = ins.Insert(ctx, next.Key, next)
	} else {
		rec, ok, err = l.cas(ctx, next.Key, TaskState{}, next)
	}
	if err != nil || !ok {
		return rec, ok, cur, found, err
	}
	return rec, true, TaskState{}, false, l.wrote(rec)
}

// wrote is what follows every successful write: the claim cache learns
// the record, and the test hook may abort there (as if the process had
// died right after its write).
func (l *Ledger) wrote(rec TaskState) error {
	if l.remember {
		l.claims.note(rec)
	}
	if l.afterWrite != nil {
		return l.afterWrite(rec.Key, rec)
	}
	return nil
}

// wroteBatch is wrote for the records of one batch insert; n counts the
// records handled before a test hook's error.
func (l *Ledger) wroteBatch(recs []TaskState) (n int, err error) {
	for i, rec := range recs {
		if err := l.wrote(rec); err != nil {
			return i + 1, err
		}
	}
	return len(recs), nil
}

func (l *Ledger) cas(ctx context.Context, key IdempotencyKey, old, next TaskState) (TaskState, bool, error) {
	if l.swap != nil {
		return l.swap.Swap(ctx, key, old, next)
	}
	ok, err := l.store.CompareAndSwap(ctx, key, old, next)
	if err != nil || !ok {
		return TaskState{}, ok, err
	}
	next.Rev = 0
	if !isZeroOld(old) {
		next.Rev = old.Rev + 1
	}
	return next, true, nil
}
