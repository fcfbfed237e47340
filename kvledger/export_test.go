package kvledger

import (
	"context"
	"time"

	"github.com/natscoord/natscoord/kvlease"
)

// SetAfterWriteHook installs a hook run between a successful write and
// its event publication; an error returned by the hook ends the operation
// right there, as if the process had died.
func SetAfterWriteHook(l *Ledger, fn func(key IdempotencyKey, rec TaskState) error) {
	l.afterWrite = fn
}

// TaskKey is the bucket key of k's record, for tests that look at the
// stored message itself (its headers).
func TaskKey(k IdempotencyKey) string { return taskKey(k) }

// SetRecordFeedLimit sets how many changes a record watcher may fall
// behind before it is caught up, until the test ends.
func SetRecordFeedLimit(t interface{ Cleanup(func()) }, n int) {
	old := recordFeedLimit
	recordFeedLimit = n
	t.Cleanup(func() { recordFeedLimit = old })
}

// RecordWatchers returns how many watchers share s's record watch.
func RecordWatchers(s *KVStore) int { return s.records.Feeds() }

// The runtime's protocol (runtime_hooks.go) under the names it had when
// it was exported, for kvledger's own tests: package worker reaches it
// through kvledger/internal/ledgerrt, and no other package can.

func (l *Ledger) ClaimLeasedFrom(ctx context.Context, actor Actor, seen TaskState, owner OwnerID, lease *kvlease.Guard, maxAttempts int, now time.Time) (TaskState, error) {
	return l.claimLeasedFrom(ctx, actor, seen, owner, lease, maxAttempts, now)
}

func (l *Ledger) Finish(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, fence FenceToken, o Outcome, now time.Time) (TaskState, error) {
	return l.finish(ctx, actor, key, owner, fence, o, now)
}

func (l *Ledger) FinishAsync(ctx context.Context, actor Actor, key IdempotencyKey, owner OwnerID, fence FenceToken, o Outcome, now time.Time) *PendingFinish {
	return l.finishAsync(ctx, actor, key, owner, fence, o, now)
}

func (l *Ledger) Pipelined() bool { return l.pipelined() }

var (
	RetryOrFail  = retryOrFail
	AttemptsUsed = attemptsUsed
)
