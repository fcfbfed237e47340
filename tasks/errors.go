package tasks

import (
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/kvledger"
)

// Sentinel errors. Match them with errors.Is; the text may carry detail.
var (
	// ErrInvalidConfig: NewClient got a Config it cannot use.
	ErrInvalidConfig = errors.New("tasks: invalid configuration")
	// ErrInvalidArgs: Submit or SubmitMany got arguments without a kind,
	// or that do not encode as JSON, or options that are invalid on their
	// own (a negative Delay or MaxAttempts, a key or need that is not
	// printable UTF-8, a task that needs itself, a Group above
	// kvledger.MaxGroupBytes) or contradict each other (RunAt and Delay).
	// Nothing was written. An option's error also matches
	// kvledger.ErrInvalidState, the ledger's name for the same rule.
	ErrInvalidArgs = errors.New("tasks: invalid task arguments")
	// ErrNotFound: Wait was given a key that has no record. It also
	// matches kvledger.ErrNoKey.
	ErrNotFound = fmt.Errorf("tasks: task not found: %w", kvledger.ErrNoKey)
	// ErrDuplicateKind: AddWorker was called twice for one kind.
	ErrDuplicateKind = errors.New("tasks: kind already has a worker")
	// ErrStarted: AddWorker after Start, or Start twice.
	ErrStarted = errors.New("tasks: client already started")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("tasks: client closed")
)
