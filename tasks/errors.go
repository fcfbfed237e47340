package tasks

import "errors"

// Sentinel errors. Match them with errors.Is; the text may carry detail.
var (
	// ErrInvalidConfig: NewClient got a Config it cannot use.
	ErrInvalidConfig = errors.New("tasks: invalid configuration")
	// ErrInvalidArgs: Submit got arguments without a kind, or that do not
	// encode as JSON, or options that contradict each other.
	ErrInvalidArgs = errors.New("tasks: invalid task arguments")
	// ErrDuplicateKind: AddWorker was called twice for one kind.
	ErrDuplicateKind = errors.New("tasks: kind already has a worker")
	// ErrStarted: AddWorker after Start, or Start twice.
	ErrStarted = errors.New("tasks: client already started")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("tasks: client closed")
)
