package kvledger

import (
	"errors"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Sentinel errors. Match them with errors.Is; the text may carry detail.
var (
	// ErrEmptyOwner: Claim or Takeover got an empty owner.
	ErrEmptyOwner = errors.New("kvledger: owner must not be empty")
	// ErrFenced: Renew, Release or Complete presented a fence token that
	// is not the record's (a newer claim exists, or it never was the
	// caller's), or the right token with an owner that is not the
	// record's: an owner that does not hold the claim holds no valid
	// fence.
	ErrFenced = errors.New("kvledger: fence token is stale")
	// ErrFenceExhausted: Claim or Takeover found a record whose fence is
	// MaxFence, so a new token would wrap; or a record entering the
	// ledger (Load, Decode, Restore) carries a fence above MaxFence.
	// Fences never wrap: the key must be deleted and admitted again under
	// a new name to run once more.
	ErrFenceExhausted = errors.New("kvledger: fence token has no room left")
	// ErrInvalidLease: Claim, Renew, Takeover, ClaimIfReady or ClaimNext
	// got a lease <= 0, which would be expired the moment it was
	// written, or one above MaxLease.
	ErrInvalidLease = errors.New("kvledger: lease must be positive and at most MaxLease")
	// ErrInvalidMaxEntries: MemStoreOptions.MaxEntries is negative.
	ErrInvalidMaxEntries = errors.New("kvledger: MaxEntries must not be negative")
	// ErrLeaseActive: Claim found a lease (anyone's) that has not reached
	// its LeaseUntil yet; or the runtime's claim (claimLeased) found the record claimed by
	// another claim than the one the caller saw (someone won the race).
	ErrLeaseActive = errors.New("kvledger: lease is still active")
	// ErrNoKey: the key has no admitted record.
	ErrNoKey = errors.New("kvledger: key has no record")
	// ErrNotClaimed: the record is not in a state the caller may hold:
	// Renew on a record that is not claimed, Release/Complete on one
	// that is not claimed presenting the record's own token (a stale
	// token is ErrFenced first), Claim on a
	// completed, failed or blocked record, Takeover on a pending,
	// completed, failed or blocked record, and Claim/Takeover when a key
	// in the record's transitive needs failed or is blocked.
	ErrNotClaimed = errors.New("kvledger: record is not claimed")
	// ErrNotStale: Takeover found a lease that has not expired yet.
	ErrNotStale = errors.New("kvledger: lease is not stale")
	// ErrUnknownStatus: Complete got a status other than StatusCompleted
	// or StatusFailed.
	ErrUnknownStatus = errors.New("kvledger: status must be StatusCompleted or StatusFailed")

	// ErrInvalidState: a TaskState breaks a Validate rule (the message
	// names the rule and the key).
	ErrInvalidState = errors.New("kvledger: invalid task state")
	// ErrMalformed: Decode got input that is not a snapshot.
	ErrMalformed = errors.New("kvledger: malformed snapshot")
	// ErrCorruptRecord: a stored record does not decode or breaks a
	// Validate rule. The KVStore refuses to overwrite such a record; an
	// operator must repair or delete it.
	ErrCorruptRecord = errors.New("kvledger: corrupt record in store")
	// ErrExists: Restore found a record already stored under a key.
	ErrExists = errors.New("kvledger: key already has a record")
	// ErrTooLarge: a record whose key or stored value the server would
	// refuse (a key past the NATS control line, a value past max_payload).
	// It is found before anything is sent, so the connection stays
	// usable; the message names the limit.
	ErrTooLarge = errors.New("kvledger: record too large")
	// ErrInvalidConfig: a store or ledger option was refused up front.
	ErrInvalidConfig = errors.New("kvledger: invalid configuration")
	// ErrNoEventLog: the store keeps no log of its writes (EventLog).
	ErrNoEventLog = errors.New("kvledger: the store keeps no event log")
	// ErrOldLayout: the bucket was created by an earlier layout (History
	// 1, no live feed) and could not be migrated with the caller's
	// rights; the error says what to run.
	ErrOldLayout = errors.New("kvledger: bucket has the pre-events layout")
	// ErrClosed: the store was closed (KVStore.Close) before a write's
	// answer came. A write it refused was never sent (a known failure);
	// one that was waiting for its answer may yet have landed, and is
	// settled by reading, as any write whose answer was lost.
	ErrClosed = errors.New("kvledger: ledger closed")
	// ErrNeeded: Delete found tasks that need the record and have not
	// ended (pending or claimed); the message names them. Removing it
	// would leave them waiting for a need that has no record.
	ErrNeeded = errors.New("kvledger: record is needed by tasks that have not ended")
	// ErrMoved: an operator action bound to a revision (AtRevision, and
	// KVStore.ResumeKind's rev) found the record written since (or gone);
	// nothing was changed.
	ErrMoved = errors.New("kvledger: record changed since it was read")
)

// closedErr names a write the store's bucket refused or left unanswered
// because Close had closed it (kvx.ErrClosed) as ErrClosed, keeping kvx's
// error in the chain (which tells the two apart: kvx.OutcomeUnknown).
func closedErr(err error) error { return kvx.AsClosed(err, ErrClosed) }
