// Package ledgerrt carries the protocol that only the task runtime
// (package kvledger/worker) calls on a kvledger.Ledger: the claim under
// a worker's lease from the record its watch saw, the outcome of an
// attempt (awaited or pipelined), and the retry-or-fail decision. Keeping
// it here rather than in kvledger's exported API keeps it out of the
// ledger's contract with its users, so it can change with the runtime;
// Go's internal rule lets only kvledger and the packages below it import
// this one.
//
// Go cannot let this package name kvledger's types (kvledger imports it),
// so each hook is a variable of type any holding a function of the exact
// type its comment gives, as grpc-go's internal package does. kvledger
// assigns every hook in one init (kvledger/runtime_hooks.go), binding
// unexported functions; kvledger/worker type-asserts each once, at its
// package initialisation (kvledger/worker/protocol.go), so a hook whose
// type does not match panics when the worker package loads (in every
// test and binary that links it), never at a task's claim.
package ledgerrt

// The hooks. Each comment gives the hook's type, in the names of the
// packages kvledger imports as: kvledger, kvlease, context, time.
var (
	// ClaimLeasedFrom is the runtime's claim of a task: seen as its
	// record watch last saw it, for owner, under the worker's lease, with
	// maxAttempts the runtime's default attempt limit.
	//
	// func(l *kvledger.Ledger, ctx context.Context, actor kvledger.Actor, seen kvledger.TaskState, owner kvledger.OwnerID, lease *kvlease.Guard, maxAttempts int, now time.Time) (kvledger.TaskState, error)
	ClaimLeasedFrom any

	// Finish records o as the outcome of the caller's claim, awaited.
	//
	// func(l *kvledger.Ledger, ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, owner kvledger.OwnerID, fence kvledger.FenceToken, o kvledger.Outcome, now time.Time) (kvledger.TaskState, error)
	Finish any

	// FinishAsync sends o as the outcome of the caller's claim without
	// waiting for the store's answer (PendingFinish.Wait gets it).
	//
	// func(l *kvledger.Ledger, ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, owner kvledger.OwnerID, fence kvledger.FenceToken, o kvledger.Outcome, now time.Time) *kvledger.PendingFinish
	FinishAsync any

	// Pipelined reports whether FinishAsync sends without waiting on l
	// (else it is Finish, run before it returns).
	//
	// func(l *kvledger.Ledger) bool
	Pipelined any

	// AttemptsUsed reports whether rec used every attempt its limit
	// allows (def: the runtime's default limit): it must not run again,
	// and a failure of its current attempt is final. RetryOrFail and the
	// claim decide by it, and the runtime asks it before a claim ahead.
	//
	// func(rec kvledger.TaskState, def int) bool
	AttemptsUsed any

	// RetryOrFail is the outcome of an attempt of rec that failed with
	// msg: failed when permanent or rec used its last attempt (def is
	// the runtime's default limit), else pending again at now plus
	// backoff(rec.Attempts).
	//
	// func(rec kvledger.TaskState, def int, msg string, permanent bool, backoff func(attempts int) time.Duration, now time.Time) kvledger.Outcome
	RetryOrFail any
)
