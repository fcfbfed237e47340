package kvledger

import (
	"context"
	"testing"
	"time"
)

// TestDropHeldWithoutTakerSkipsGuards: a Ledger without a lease taker
// files no claim's lease, so ending a claim (every outcome) does not take
// the guards' Ledger-wide mutex: here held by another goroutine for the
// whole test, and dropHeld still returns.
func TestDropHeldWithoutTakerSkipsGuards(t *testing.T) {
	var l Ledger
	l.guards.mu.Lock()
	t.Cleanup(l.guards.mu.Unlock)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.dropHeld(context.Background(), "k", 1)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("dropHeld waited for the guards' mutex on a Ledger without a lease taker")
	}
}
