package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/natscoord/natscoord/kvledger"
)

// rebase is what `ledger admit` sends: the payload and needs given on the
// command line, or, for a rebase (a higher sequence over a pending or
// claimed record) without --task or --needs, the stored ones. A rebase
// replaces the whole submission, so an admit that left a flag out would
// otherwise drop what the earlier sequence stored.
type rebase struct {
	task     any
	needs    []kvledger.IdempotencyKey
	rebasing bool
	from     kvledger.Sequence
	kept     []string // "task", "needs": what was carried over
}

func prepareRebase(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, seq kvledger.Sequence,
	keepTask, keepNeeds bool, task any, needs []kvledger.IdempotencyKey) (rebase, error) {
	rb := rebase{task: task, needs: needs}
	cur, found, err := l.State(ctx, key)
	if err != nil || !found {
		return rb, err
	}
	if seq <= cur.Sequence || (cur.Status != kvledger.StatusPending && cur.Status != kvledger.StatusClaimed) {
		return rb, nil // not admitted: nothing to carry over
	}
	rb.rebasing, rb.from = true, cur.Sequence
	if keepTask && cur.Task != nil {
		rb.task = cur.Task
		rb.kept = append(rb.kept, "task")
	}
	if keepNeeds && len(cur.Needs) > 0 {
		rb.needs = cur.Needs
		rb.kept = append(rb.kept, "needs")
	}
	return rb, nil
}

// verb says what the admit of sequence seq did; t is the record it wrote,
// or when it admitted nothing the record it found.
func (rb rebase) verb(ok bool, seq kvledger.Sequence, t kvledger.TaskState) string {
	switch {
	case !ok && t.Sequence >= seq:
		return "not admitted (the key already holds sequence " + strconv.FormatUint(uint64(t.Sequence), 10) +
			", which --seq " + strconv.FormatUint(uint64(seq), 10) + " does not exceed)"
	case !ok && t.Status == kvledger.StatusBlocked:
		// Blocked has not ended: reopening what blocks it returns it to
		// pending (kvledger's Reopen unblocks the dependents).
		by := escapeCell(string(t.BlockedBy))
		return "not admitted (the key holds a task blocked by " + by + ", which admissions do not change; " +
			"`natscoord ledger reopen " + by + "` returns it to pending)"
	case !ok:
		// Completed or failed (a cancelled task is stored failed).
		return "not admitted (the key already holds an ended task, which no admission changes)"
	case rb.rebasing:
		return "rebased from sequence " + strconv.FormatUint(uint64(rb.from), 10) + " to " + strconv.FormatUint(uint64(t.Sequence), 10)
	}
	return "admitted"
}

// note names what a rebase carried over, and how to drop it.
func (rb rebase) note(ok bool) string {
	if !ok || len(rb.kept) == 0 {
		return ""
	}
	var what, flags []string
	for _, k := range rb.kept {
		switch k {
		case "task":
			what, flags = append(what, "task payload"), append(flags, "--task null")
		case "needs":
			what, flags = append(what, "needs"), append(flags, `--needs ""`)
		}
	}
	return "; kept the " + strings.Join(what, " and ") + " of sequence " + strconv.FormatUint(uint64(rb.from), 10) +
		" (" + strings.Join(flags, " or ") + " drops them)"
}

// stateText is a record's phase (kvledger's TaskState.Phase, the one
// vocabulary the CLI shows; the stored status is in --json), with what
// blocks it: "running", "scheduled", "blocked by dep".
func stateText(t kvledger.TaskState, now time.Time) string {
	s := string(t.Phase(now))
	if t.BlockedBy != "" {
		s += " by " + escapeCell(string(t.BlockedBy))
	}
	return s
}

// ownerText names a record's owner, when it has one.
func ownerText(t kvledger.TaskState) string {
	if t.Owner == "" {
		return ""
	}
	return ", owner " + escapeCell(string(t.Owner))
}
