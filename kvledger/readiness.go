package kvledger

import (
	"time"
)

// Readiness is the one statement of when a record may be claimed. Every
// reader that decides it calls Judge: ClaimIfReady and ClaimNext (from
// the store), the runtime's index (package worker, from its watches) and
// the dashboard (from its view). Each gives Judge what it knows of the
// record's needs and of the lease that holds the record; none spells the
// rule itself.

// VerdictKind is what Judge found a record to be.
type VerdictKind uint8

// The verdicts. Ready, Takeover and ReadLease are claimable (Claimable).
const (
	// VerdictFinal: completed, failed or blocked (or a status this
	// version does not know); no claim applies.
	VerdictFinal VerdictKind = iota
	// VerdictReady: pending, due (RunAt not after now), every need
	// completed and no live lease holds it.
	VerdictReady
	// VerdictWaitTime: pending, not due before Verdict.At (its RunAt).
	VerdictWaitTime
	// VerdictWaitNeed: pending, Verdict.Need (its first need that is not
	// completed) has no record or has not completed yet.
	VerdictWaitNeed
	// VerdictBlockedNeed: pending, Verdict.Need (its first need that is
	// not completed) failed or is blocked. It never runs: the failure's
	// walk of the dependents blocks it, and a claim blocks it instead of
	// running it (ErrNotClaimed).
	VerdictBlockedNeed
	// VerdictHeld: a live lease holds it: claimed under a live lease, or
	// pending while a claimant holds its per-record lease.
	VerdictHeld
	// VerdictTakeover: claimed, and the lease of its claim ended: a
	// takeover claims it.
	VerdictTakeover
	// VerdictReadLease: claimed, and the state of its claim's lease is
	// not known to the caller: a takeover claims it once a read of that
	// lease on the server finds it ended (LeaseEnded).
	VerdictReadLease
)

var verdictNames = [...]string{"final", "ready", "wait-time", "wait-need", "blocked-need", "held", "takeover", "read-lease"}

func (k VerdictKind) String() string {
	if int(k) < len(verdictNames) {
		return verdictNames[k]
	}
	return "unknown"
}

// Verdict is Judge's answer: its Kind, and what the record waits for.
type Verdict struct {
	Kind VerdictKind
	// At is the record's RunAt, with VerdictWaitTime.
	At time.Time
	// Need is the need that decided, with VerdictWaitNeed and
	// VerdictBlockedNeed.
	Need IdempotencyKey
}

// Claimable reports whether a claim may take the record now: a ready
// pending record, or a claim whose lease ended or is still to be read.
func (v Verdict) Claimable() bool {
	return v.Kind == VerdictReady || v.Kind == VerdictTakeover || v.Kind == VerdictReadLease
}

// LeaseState is what a caller of Judge knows of the lease that holds a
// record: for a claimed record, its claim's lease (the one it names, or
// for a claim made without one, its LeaseUntil against the caller's
// clock); for a pending record, a per-record lease of a claimant outside
// the runtime (package worker's LeaseKey), if any. Liveness is the
// server's (a watch or a read of the lease bucket), never a guess from
// another process's clock (a named lease is read from the server).
type LeaseState uint8

const (
	// LeaseStateUnknown: not read, or not delivered yet.
	LeaseStateUnknown LeaseState = iota
	// LeaseStateLive: the server holds the lease.
	LeaseStateLive
	// LeaseStateEnded: the server no longer holds it (or the record has none).
	LeaseStateEnded
)

// Judge decides whether rec may be claimed at now. need looks a need up
// (found false: the need has no record, which is not completed); lease
// is what the caller knows of the lease that holds rec. Judge reads
// nothing itself and has no side effect, so the runtime answers need and
// lease from its watches, ClaimIfReady from the store and the lease
// bucket, the dashboard from its view.
//
// The rule, in order: a record that is neither pending nor claimed is
// final. A live lease holds either. A claimed record is taken over when
// its lease ended, and once read otherwise. A pending record waits for
// its RunAt, then for its needs in their order: the first one not
// completed decides (failed or blocked: VerdictBlockedNeed, else
// VerdictWaitNeed). Otherwise it is ready.
func Judge(rec TaskState, need func(IdempotencyKey) (Status, bool), lease LeaseState, now time.Time) Verdict {
	switch rec.Status {
	case StatusPending:
	case StatusClaimed:
		switch lease {
		case LeaseStateLive:
			return Verdict{Kind: VerdictHeld}
		case LeaseStateEnded:
			return Verdict{Kind: VerdictTakeover}
		}
		return Verdict{Kind: VerdictReadLease}
	default:
		return Verdict{Kind: VerdictFinal}
	}
	if lease == LeaseStateLive {
		return Verdict{Kind: VerdictHeld}
	}
	if rec.RunAt.After(now) {
		return Verdict{Kind: VerdictWaitTime, At: rec.RunAt}
	}
	for _, n := range rec.Needs {
		st, found := need(n)
		switch {
		case found && st.blocks():
			return Verdict{Kind: VerdictBlockedNeed, Need: n}
		case !found || st != StatusCompleted:
			return Verdict{Kind: VerdictWaitNeed, Need: n}
		}
	}
	return Verdict{Kind: VerdictReady}
}

// Ready reports whether rec, a pending record that no live lease holds,
// may start now: Judge's VerdictReady.
//
// Deprecated: call Judge, which also says why a task waits.
func Ready(rec TaskState, now time.Time, need func(IdempotencyKey) (Status, bool)) bool {
	return Judge(rec, need, LeaseStateUnknown, now).Kind == VerdictReady
}
