package kvlock

import (
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/kvlease"
)

// Every error of this package matches one of these with errors.Is, or is a
// transient server/transport error passed through unchanged (never
// reported as contention, loss or vacancy).
var (
	// ErrInvalidConfig means a Config field out of range or a nil
	// JetStream handle.
	ErrInvalidConfig = errors.New("kvlock: invalid config")
	// ErrInvalidKey means a lock key (or election name) that breaks the key
	// convention: see ValidateKey.
	ErrInvalidKey = errors.New("kvlock: invalid key")
	// ErrLost means the lock could no longer be confirmed: a renewal found
	// the key taken over (force release, expiry), or the validity window
	// ran out before a renewal was confirmed. It is the cause of a held
	// context's cancellation. Errors matching it also match kvlease.ErrLost.
	ErrLost = errors.New("kvlock: lock lost")
	// ErrReleased is the cause of a held context after Release (or Close).
	ErrReleased = errors.New("kvlock: lock released")
	// ErrClosed means the Locker is closing or closed.
	ErrClosed = errors.New("kvlock: locker closed")
	// ErrQueueEntryLost means a fair waiter's own queue entry vanished
	// (force-released, or it could not be renewed in time): it no longer
	// has a place in line and stops instead of waiting forever.
	ErrQueueEntryLost = errors.New("kvlock: queue entry lost")
	// ErrNoLeader means an election has no leader: the lease is vacant, or
	// its winner has not yet published its value.
	ErrNoLeader = errors.New("kvlock: no leader")
	// ErrNotLeader means Proclaim or Resign on an Election that does not
	// lead (never campaigned, resigned, or lost its lease).
	ErrNotLeader = errors.New("kvlock: not the leader")
	// ErrCampaigning means a second Campaign on an Election that is already
	// campaigning or leading. Use one Election per candidate.
	ErrCampaigning = errors.New("kvlock: already campaigning")
)

// errReleased is causeOf(kvlease.ErrReleased), made once.
var errReleased = fmt.Errorf("%w: %w", ErrReleased, kvlease.ErrReleased)

// causeOf maps a kvlease guard's end cause into this package's sentinels,
// keeping the original in the chain.
func causeOf(c error) error {
	switch {
	case c == nil:
		return nil
	case c == kvlease.ErrReleased: // identity: wrapped causes take the general cases below
		// Every release ends with exactly this cause: answer it without
		// formatting a new error each time.
		return errReleased
	case errors.Is(c, kvlease.ErrLost):
		return fmt.Errorf("%w: %w", ErrLost, c)
	case errors.Is(c, kvlease.ErrClosed):
		return fmt.Errorf("%w: %w", ErrReleased, ErrClosed)
	case errors.Is(c, kvlease.ErrReleased):
		return fmt.Errorf("%w: %w", ErrReleased, c)
	}
	return c
}

// mapErr maps errors coming out of kvlease calls.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kvlease.ErrLost):
		return fmt.Errorf("%w: %w", ErrLost, err)
	case errors.Is(err, kvlease.ErrClosed):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(err, kvlease.ErrInvalidKey):
		return fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	return err
}
