package kvledger_test

import (
	"fmt"
	"time"

	"github.com/natscoord/natscoord/kvledger"
)

// Attempts reads a task's attempts from the writes of its record (as
// Ledger.History returns them): each ends with its own error, and the
// completion does not repeat the error of the retry before it.
func ExampleAttempts() {
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	w := func(sec int, st kvledger.Status, ev kvledger.TaskState) kvledger.TaskState {
		ev.Key, ev.Status, ev.UpdatedAt, ev.Rev = "resize-42", st, t0.Add(time.Duration(sec)*time.Second), uint64(sec+1)
		return ev
	}
	history := []kvledger.TaskState{
		w(0, kvledger.StatusPending, kvledger.TaskState{LastEvent: kvledger.AdmittedEvent, MaxAttempts: 3}),
		w(1, kvledger.StatusClaimed, kvledger.TaskState{LastEvent: kvledger.ClaimedEvent, Owner: "w1", Fence: 2, Attempts: 1, MaxAttempts: 3}),
		w(2, kvledger.StatusPending, kvledger.TaskState{LastEvent: kvledger.RetriedEvent, Fence: 2, Attempts: 1, MaxAttempts: 3, LastError: "disk full"}),
		w(4, kvledger.StatusClaimed, kvledger.TaskState{LastEvent: kvledger.ClaimedEvent, Owner: "w2", Fence: 3, Attempts: 2, MaxAttempts: 3, LastError: "disk full"}),
		w(5, kvledger.StatusCompleted, kvledger.TaskState{LastEvent: kvledger.CompletedEvent, Owner: "w2", Fence: 3, Attempts: 2, MaxAttempts: 3, LastError: "disk full"}),
	}
	for _, a := range kvledger.Attempts(history) {
		fmt.Printf("%d of %d by %s: %s after %v %q\n", a.N, a.Max, a.Owner, a.Outcome, a.Ended.Sub(a.Started), a.Error)
	}
	// Output:
	// 1 of 3 by w1: retried after 1s "disk full"
	// 2 of 3 by w2: completed after 1s ""
}
