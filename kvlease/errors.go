package kvlease

import (
	"errors"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Every error this package returns matches one of these with errors.Is,
// or is a transient server/transport error passed through unchanged (and
// never reported as contention or loss).
var (
	// ErrLost means ownership could no longer be confirmed within the
	// guard's validity window: a renewal or guarded write found the key at
	// another revision (force release, expiry and re-acquisition), or the
	// window ran out (a pause, a partition, renewals failing).
	ErrLost = errors.New("kvlease: lease lost")
	// ErrReleased is the cause of a guard's context after Release.
	ErrReleased = errors.New("kvlease: lease released")
	// ErrExported is the cause of a guard's context after Export handed
	// its ownership to a token.
	ErrExported = errors.New("kvlease: lease exported")
	// ErrAbandoned is the cause of a guard's context after Abandon: the
	// lease stays until the server expires it.
	ErrAbandoned = errors.New("kvlease: lease abandoned")
	// ErrInvalidTTL means a TTL outside MinTTL..MaxTTL.
	ErrInvalidTTL = errors.New("kvlease: invalid TTL")
	// ErrInvalidWait means a negative wait or one above Config.MaxWait.
	ErrInvalidWait = errors.New("kvlease: invalid wait")
	// ErrInvalidKey means a key its codec cannot encode, an empty key, or
	// a lease key longer than Config.MaxKeyBytes.
	ErrInvalidKey = errors.New("kvlease: invalid key")
	// ErrInvalidName means a family name that is not one KV key token.
	ErrInvalidName = errors.New("kvlease: invalid family name")
	// ErrInvalidConfig means a Config field out of range.
	ErrInvalidConfig = errors.New("kvlease: invalid config")
	// ErrInvalidToken means a transfer token that does not decode or does
	// not belong to the family it is restored into.
	ErrInvalidToken = errors.New("kvlease: invalid token")
	// ErrClosed means the manager is closing or closed.
	ErrClosed = errors.New("kvlease: manager closed")
	// ErrCorruptValue means a lease key holds a value that is not a lease
	// (written by another tool, or damaged): acquisitions of it fail with
	// this error instead of waiting for a holder that does not exist, and
	// ForceRelease removes it.
	ErrCorruptValue = errors.New("kvlease: lease key holds a corrupt value")
	// ErrTooLarge means a guarded write (Proof.Put) whose key or value the
	// server would refuse (the NATS control line, max_payload), or an Info
	// above MaxInfoBytes (TryAcquireKeyInfo). It is found
	// before anything is sent, so the connection stays usable; the message
	// names the limit. The lease is not affected.
	ErrTooLarge = errors.New("kvlease: key or value too large")
	// ErrPanicked means a With or WithProof callback panicked; the error
	// carries the panic value and stack, and the lease was released.
	ErrPanicked = errors.New("kvlease: callback panicked")
	// ErrTooManyActive means the manager already holds Config.MaxActive
	// guards.
	ErrTooManyActive = errors.New("kvlease: too many active leases")
	// ErrDuplicateName means a second, distinct declaration of a family
	// name was bound to one manager.
	ErrDuplicateName = errors.New("kvlease: duplicate family name")
	// ErrForeignGuard means a guard passed to a family (Export) or used
	// with a proof that does not belong to it.
	ErrForeignGuard = errors.New("kvlease: guard belongs to another family or manager")
	// ErrNotRenewable means StartRenewing was given an interval that
	// cannot renew before the validity window ends.
	ErrNotRenewable = errors.New("kvlease: renew interval does not fit the validity window")
)

// ErrBusy means ForceRelease kept finding the key changed between its read
// and its conditional delete (a holder renewing very fast or a stream of
// new holders). Retry later.
var ErrBusy = errors.New("kvlease: key kept changing")

// closedErr names a write the manager's bucket refused or left
// unanswered because Close had closed it (kvx.ErrClosed) as this
// package's ErrClosed, keeping kvx's error in the chain: a refused one
// (nothing sent) stays a known failure, an unanswered one an outcome
// unknown (kvx.OutcomeUnknown).
func closedErr(err error) error { return kvx.AsClosed(err, ErrClosed) }
