package kvledger

import (
	"context"
	"errors"
	"testing"
)

// TestPendingFinishWaitKeepsAnswerWithoutAllocating: Wait keeps its
// answer for a second call in the PendingFinish itself; kept through a
// pointer, every pipelined outcome's record moved to the heap on its own
// (a TaskState is ~392 bytes).
func TestPendingFinishWaitKeepsAnswerWithoutAllocating(t *testing.T) {
	errSent := errors.New("sent")
	sent := func(context.Context) (TaskState, bool, error) { return TaskState{}, false, errSent }
	p := &PendingFinish{l: &Ledger{}, key: "k"}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(50, func() {
		p.sent = sent
		if _, err := p.Wait(ctx); !errors.Is(err, errSent) {
			t.Fatalf("Wait = %v, want %v", err, errSent)
		}
		if _, err := p.Wait(ctx); !errors.Is(err, errSent) {
			t.Fatalf("second Wait = %v, want the first's %v", err, errSent)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Wait, want 0", allocs)
	}
}
