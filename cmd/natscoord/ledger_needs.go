package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/natscoord/natscoord/kvledger"
)

// missingNeeds returns the needs of t that have no record. Admission
// takes them (a need may be admitted later), but the task cannot run
// until they exist and complete, which `ledger admit` points out.
func missingNeeds(ctx context.Context, l *kvledger.Ledger, t kvledger.TaskState) ([]kvledger.IdempotencyKey, error) {
	var missing []kvledger.IdempotencyKey
	for _, n := range t.Needs {
		_, found, err := l.State(ctx, n)
		if err != nil {
			return nil, err
		}
		if !found {
			missing = append(missing, n)
		}
	}
	return missing, nil
}

// missingNote is the note `ledger admit` prints for needs without a
// record.
func missingNote(key kvledger.IdempotencyKey, missing []kvledger.IdempotencyKey) string {
	// At most maxNamedNeeds names: a task with thousands of needs gets a
	// one-line note, not a line as long as its needs.
	const maxNamedNeeds = 5
	names := make([]string, 0, maxNamedNeeds+1)
	for _, n := range missing[:min(len(missing), maxNamedNeeds)] {
		names = append(names, fmt.Sprintf("%q", string(n)))
	}
	if len(missing) > maxNamedNeeds {
		names = append(names, fmt.Sprintf("and %d more", len(missing)-maxNamedNeeds))
	}
	what := "need " + names[0] + " has"
	if len(missing) > 1 {
		what = "needs " + strings.Join(names, ", ") + " have"
	}
	return fmt.Sprintf("note: %s no record yet; %q waits until it is admitted and completes", what, string(key))
}

// waitingReason says why a task that is not final is not: a record
// missing (its own or a need's), a need not completed yet, a run-at time
// ahead, or the claim it is under. It is what `ledger wait` prints
// for a task it gave up on; the dashboard shows the same "no record".
func waitingReason(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey) string {
	t, found, err := l.State(ctx, key)
	switch {
	case err != nil:
		return "unknown: " + oneLine(err)
	case !found:
		return "no record"
	}
	// A need without a record first: nothing will ever run it until
	// someone admits it, while an unfinished one is on its way.
	unfinished := ""
	for _, n := range t.Needs {
		nt, found, err := l.State(ctx, n)
		switch {
		case err != nil:
			return fmt.Sprintf("needs %q: %s", string(n), oneLine(err))
		case !found:
			return fmt.Sprintf("needs %q, which has no record", string(n))
		case nt.Status != kvledger.StatusCompleted && unfinished == "":
			unfinished = fmt.Sprintf("needs %q, which is %s", string(n), nt.Status)
		}
	}
	if unfinished != "" {
		return unfinished
	}
	switch {
	case t.Status == kvledger.StatusClaimed:
		return fmt.Sprintf("claimed by %q (attempt %d)", string(t.Owner), t.Attempts)
	case t.RunAt.After(time.Now()):
		return "pending, runs at " + timeOrDash(t.RunAt)
	}
	return "pending, not claimed yet"
}
