package kvledger_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
)

// A build fails; the test that needs it gets blocked, and a late deploy
// admitted after the failure lands blocked too.
func Example() {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	store := kvledger.NewMemStore() // in memory; use NewKVStore for a shared bucket
	l, _ := kvledger.New(store)

	_, _ = l.Admit(ctx, "ci", "build", 1, map[string]any{"commit": "abc123"}, now)
	_, _ = l.Admit(ctx, "ci", "test", 1, nil, now, "build")
	fence, _ := l.Claim(ctx, "worker-1", "build", "worker-1", time.Minute, now)
	_ = l.Complete(ctx, "worker-1", "build", "worker-1", fence, kvledger.StatusFailed, now)
	_, _ = l.Admit(ctx, "ci", "deploy", 1, nil, now, "test")

	// The store's writes are the events: follow them from the start.
	printed := 0
	_ = store.Follow(ctx, 0, func(e events.Event) bool {
		fmt.Printf("%-18s %-7s %s\n", e.Name, e.Key, e.Status)
		printed++
		return printed < 6
	})
	by, blocked, _ := l.Blocked(ctx, "deploy")
	fmt.Println("deploy blocked:", blocked, "by", by)
	_, err := l.Claim(ctx, "worker-2", "test", "worker-2", time.Minute, now)
	fmt.Println(errors.Is(err, kvledger.ErrNotClaimed))
	// Output:
	// ledger.admitted    build   pending
	// ledger.admitted    test    pending
	// ledger.claimed     build   claimed
	// ledger.completed   build   failed
	// ledger.blocked     test    blocked
	// ledger.admitted    deploy  blocked
	// deploy blocked: true by test
	// true
}

// A worker that lost its lease is fenced out.
func ExampleLedger_Takeover() {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	l, _ := kvledger.New(nil)
	_, _ = l.Admit(ctx, "api", "job", 1, nil, now)
	slow, _ := l.Claim(ctx, "a", "job", "slow", 10*time.Second, now)
	fast, _ := l.Takeover(ctx, "b", "job", "fast", 10*time.Second, now.Add(11*time.Second))
	err := l.Complete(ctx, "a", "job", "slow", slow, kvledger.StatusCompleted, now.Add(12*time.Second))
	fmt.Println(fast > slow, errors.Is(err, kvledger.ErrFenced))
	// Output: true true
}
