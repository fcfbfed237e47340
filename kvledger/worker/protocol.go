package worker

import (
	"context"
	"time"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/internal/ledgerrt"
)

// The runtime's protocol with the ledger: the calls only the runtime
// makes on a kvledger.Ledger, which kvledger keeps out of its exported
// API and hands over through kvledger/internal/ledgerrt (see its package
// doc). Each is asserted to its type here, once, when the package loads:
// a hook kvledger did not assign, or assigned with another type, panics
// then (in every test and binary that links the worker), never at a
// task's claim. TestProtocolHooks calls each.
var (
	// claimLeasedFrom claims seen (as the record watch saw it) for
	// owner under the worker's lease; maxAttempts is Config.MaxAttempts.
	claimLeasedFrom = ledgerrt.ClaimLeasedFrom.(func(l *kvledger.Ledger, ctx context.Context, actor kvledger.Actor, seen kvledger.TaskState, owner kvledger.OwnerID, lease *kvlease.Guard, maxAttempts int, now time.Time) (kvledger.TaskState, error))
	// finishClaim records o as the claim's outcome and waits for it.
	finishClaim = ledgerrt.Finish.(func(l *kvledger.Ledger, ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, owner kvledger.OwnerID, fence kvledger.FenceToken, o kvledger.Outcome, now time.Time) (kvledger.TaskState, error))
	// finishAsync sends o as the claim's outcome without waiting.
	finishAsync = ledgerrt.FinishAsync.(func(l *kvledger.Ledger, ctx context.Context, actor kvledger.Actor, key kvledger.IdempotencyKey, owner kvledger.OwnerID, fence kvledger.FenceToken, o kvledger.Outcome, now time.Time) *kvledger.PendingFinish)
	// pipelined reports whether finishAsync sends without waiting on l.
	pipelined = ledgerrt.Pipelined.(func(l *kvledger.Ledger) bool)
	// attemptsUsed reports whether a record used its last attempt.
	attemptsUsed = ledgerrt.AttemptsUsed.(func(rec kvledger.TaskState, def int) bool)
	// retryOrFail is the outcome of a failed attempt.
	retryOrFail = ledgerrt.RetryOrFail.(func(rec kvledger.TaskState, def int, msg string, permanent bool, backoff func(attempts int) time.Duration, now time.Time) kvledger.Outcome)
)
