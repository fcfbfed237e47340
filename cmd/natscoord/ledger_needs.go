package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/natscoord/natscoord/kvledger"
)

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

// waitingReason says why a task that is not final is not, as
// kvledger.Judge finds it (the one readiness rule, in its order): the
// claim it is under, a run-at time ahead, a need not completed yet, or
// none of these. A need without a record is named before any other
// unfinished one: nothing will ever run it until someone admits it,
// while an unfinished one is on its way. It is what `ledger wait`
// prints for a task it gave up on; the dashboard shows the same "no
// record".
func waitingReason(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey) string {
	t, found, err := l.State(ctx, key)
	switch {
	case err != nil:
		return "unknown: " + oneLine(err)
	case !found:
		return "no record"
	}
	type needRead struct {
		t     kvledger.TaskState
		found bool
		err   error
	}
	read := make(map[kvledger.IdempotencyKey]needRead)
	need := func(n kvledger.IdempotencyKey) (kvledger.Status, bool) {
		r, ok := read[n]
		if !ok {
			r.t, r.found, r.err = l.State(ctx, n)
			read[n] = r
		}
		return r.t.Status, r.found
	}
	v := kvledger.Judge(t, need, kvledger.LeaseStateUnknown, wall.Now())
	switch v.Kind {
	case kvledger.VerdictReadLease, kvledger.VerdictHeld, kvledger.VerdictTakeover:
		return fmt.Sprintf("claimed by %q (attempt %d)", string(t.Owner), t.Attempts)
	case kvledger.VerdictWaitTime:
		return "pending, runs at " + timeOrDash(v.At)
	case kvledger.VerdictWaitNeed:
		for _, n := range t.Needs {
			if need(n); read[n].err == nil && !read[n].found {
				return fmt.Sprintf("needs %q, which has no record", string(n))
			}
		}
		fallthrough
	case kvledger.VerdictBlockedNeed:
		r := read[v.Need]
		switch {
		case r.err != nil:
			return fmt.Sprintf("needs %q: %s", string(v.Need), oneLine(r.err))
		case !r.found:
			return fmt.Sprintf("needs %q, which has no record", string(v.Need))
		}
		return fmt.Sprintf("needs %q, which is %s", string(v.Need), r.t.Phase(wall.Now()))
	case kvledger.VerdictReady:
		return "pending, not claimed yet"
	}
	return string(t.Phase(wall.Now()))
}
