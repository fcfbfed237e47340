package kvledger

import (
	"time"

	"github.com/natscoord/natscoord/events"
)

// AttemptOutcome is how one attempt at a task ended.
type AttemptOutcome string

const (
	// AttemptRunning: the claim has not ended.
	AttemptRunning AttemptOutcome = "running"
	// AttemptRetried: the attempt failed and the task waits to run again
	// (its Error says why).
	AttemptRetried AttemptOutcome = "retried"
	// AttemptReleased: the claim was given back without an outcome (a
	// drain, Release, a handler's worker.GiveBack: its Error says why);
	// the task is pending again.
	AttemptReleased AttemptOutcome = "released"
	// AttemptCompleted: the task completed.
	AttemptCompleted AttemptOutcome = "completed"
	// AttemptFailed: the task failed for good (a permanent error, its
	// last attempt, or a lost claim with no attempts left).
	AttemptFailed AttemptOutcome = "failed"
	// AttemptCancelled: the task was cancelled while this claim held it.
	AttemptCancelled AttemptOutcome = "cancelled"
	// AttemptBlocked: a failed need blocked the task while this claim
	// held it.
	AttemptBlocked AttemptOutcome = "blocked"
	// AttemptLost: another claim took the task over after this one's
	// lease ended; this attempt wrote no outcome.
	AttemptLost AttemptOutcome = "lost"
)

// Attempt is one claim of a task and how it ended, as Attempts reads it
// from the record's stored writes.
type Attempt struct {
	// N is the attempt's number as the record counts it (TaskState.
	// Attempts after the claim: 1 for the first); a Reopen starts the
	// count again. An attempt released without counting (a drain, a
	// GiveBack) shares its number with the next. 0 on a claim that counts no attempt (Ledger.Claim).
	N int `json:"n"`
	// Max is the record's MaxAttempts (0: the worker's default).
	Max   int        `json:"max,omitempty"`
	Owner OwnerID    `json:"owner"`
	Fence FenceToken `json:"fence"`
	// Started is the claim's write time (the claimant's clock); zero
	// when the history no longer holds the claim.
	Started time.Time `json:"started,omitzero"`
	// Ended is the time of the write that ended the attempt (the
	// writer's clock); zero while it runs.
	Ended   time.Time      `json:"ended,omitzero"`
	Outcome AttemptOutcome `json:"outcome"`
	// Error is the error this attempt ended with; empty when it ended
	// without one. A record keeps only its last error (LastError), which
	// a later write carries along: each attempt shows the error of the
	// write that ended it, never its predecessor's, also when it is the
	// same text (a handler that gives back twice for one cause).
	Error string `json:"error,omitempty"`
	// StartRev and EndRev are the revisions of the claim's write and of
	// the write that ended it (0 when not held or not ended).
	StartRev uint64 `json:"start_rev,omitempty"`
	EndRev   uint64 `json:"end_rev,omitempty"`
}

// Attempts reads a task's attempts, oldest first, from the stored writes
// of its record, oldest first (Ledger.History, KVStore.History). A claim
// starts an attempt: a claimed write whose previous write is not the same
// claim (another status, or another fence). The next write that is not
// that claim's (a renewal keeps the fence) ends it: pending again as a
// retry or a release, completed, failed, cancelled, blocked, or claimed
// by another fence (lost).
//
// A history that does not reach back to a claim (a bucket keeping only
// the last write, History 1) still shows the attempt its first write
// ended: a retry, or a final write by an owner, with its number, outcome
// and error, and no start time.
func Attempts(history []TaskState) []Attempt {
	var (
		out  []Attempt
		open = -1 // index in out of the attempt running, -1 when none
		// claimErr and claimN are the LastError the running attempt's
		// claim carried along (its predecessor's) and the Attempts it
		// wrote; see ownError.
		claimErr string
		claimN   int
	)
	for i, s := range history {
		if s.Status == StatusClaimed {
			if open >= 0 && out[open].Fence == s.Fence {
				continue // a renewal of the running claim
			}
			if open >= 0 {
				end(&out[open], s, AttemptLost, "")
			}
			a := Attempt{N: s.Attempts, Max: s.MaxAttempts, Owner: s.Owner, Fence: s.Fence, Outcome: AttemptRunning}
			if i > 0 || s.LastEvent == ClaimedEvent || s.LastEvent == TakenOverEvent {
				a.Started, a.StartRev = s.UpdatedAt, s.Rev
			}
			out = append(out, a)
			open, claimErr, claimN = len(out)-1, s.LastError, s.Attempts
			continue
		}
		outcome, errText := endOf(s)
		switch {
		case open >= 0:
			if outcome == AttemptReleased && !ownError(s, claimN, claimErr) {
				errText = ""
			}
			end(&out[open], s, outcome, errText)
			open = -1
		case i == 0 && endedAnAttempt(s):
			a := Attempt{N: s.Attempts, Max: s.MaxAttempts, Owner: s.Owner, Fence: s.Fence}
			end(&a, s, outcome, errText)
			out = append(out, a)
		}
	}
	return out
}

// AttemptsOf reads a task's attempts, oldest first, from the events of
// its key, oldest first (Ledger.KeyEvents), by the rule of Attempts: a
// reader that shows a key's events (the dashboard's timeline) has its
// attempts from the same read. Only the events of the current record
// count: those after the key's last deletion or expiry.
func AttemptsOf(evs []events.Event) []Attempt {
	from := 0
	for i, e := range evs {
		if e.Name == DeletedEvent || e.Name == ExpiredEvent {
			from = i + 1 // a delete or expiry ends the earlier incarnation
		}
	}
	history := make([]TaskState, 0, len(evs)-from)
	for _, e := range evs[from:] {
		name := e.Name
		if name == RetainedEvent {
			// The record written again unchanged, which rolled up the
			// write that ended it: read it as that write.
			name = finalEvent(Status(e.Status), e.Cancelled)
		}
		history = append(history, TaskState{Key: IdempotencyKey(e.Key), Status: Status(e.Status),
			Owner: OwnerID(e.Owner), Fence: FenceToken(e.Fence), UpdatedAt: e.Time, Rev: e.Revision,
			LastEvent: name, Attempts: e.Attempts, MaxAttempts: e.MaxAttempts, LastError: e.LastError,
			Cancelled: e.Cancelled})
	}
	return Attempts(history)
}

// finalEvent names the write that made a record final with status.
func finalEvent(status Status, cancelled bool) events.Name {
	switch {
	case status == StatusBlocked:
		return BlockedEvent
	case cancelled:
		return CancelledEvent
	}
	return CompletedEvent
}

// endOf is how a write that is not a claim ends the claim before it, and
// the error it ends it with.
func endOf(s TaskState) (AttemptOutcome, string) {
	switch s.Status {
	case StatusPending:
		if s.LastEvent == RetriedEvent {
			return AttemptRetried, s.LastError
		}
		return AttemptReleased, s.LastError // why the runtime gave it back, if it said
	case StatusCompleted:
		return AttemptCompleted, ""
	case StatusBlocked:
		return AttemptBlocked, ""
	}
	if s.Cancelled {
		return AttemptCancelled, s.LastError
	}
	return AttemptFailed, s.LastError
}

// ownError reports whether s, a release ending a claim that wrote
// claimN attempts and carried claimErr along, stored an error of its
// own. Two writes release a claim, and the record tells them apart:
//
//   - Ledger.Release keeps the record's LastError, the one the claim
//     carried along (its predecessor's), and its Attempts;
//   - the runtime (finishNext, Outcome.Uncount: a drain or a handler's
//     worker.GiveBack) stores its own error, empty for a drain, and
//     takes its attempt back: its Attempts is below the claim's, which
//     counted it (every runtime claim counts one).
//
// So a release below its claim's count has its own error even when the
// text is the claim's (a handler that gives back twice for the same
// cause), and any other release whose error is the claim's has none. The
// stored writes have always said so, old histories included, which is
// why the writes themselves are left as they are: clearing LastError in
// Ledger.Release would tell nothing that Attempts does not, and would
// drop the record's last error, which operators read.
func ownError(s TaskState, claimN int, claimErr string) bool {
	return s.Attempts < claimN || s.LastError != claimErr
}

// endedAnAttempt reports whether s, read with nothing before it, is the
// write that ended a claim: a retry, or a completion or failure that
// names an owner (a pending record cancelled or failed for want of
// attempts names none).
func endedAnAttempt(s TaskState) bool {
	switch {
	case s.Status == StatusPending:
		return s.LastEvent == RetriedEvent
	case s.Status == StatusCompleted || s.Status == StatusFailed:
		return s.Owner != "" && (s.LastEvent == CompletedEvent || s.LastEvent == CancelledEvent)
	}
	return false
}

func end(a *Attempt, s TaskState, outcome AttemptOutcome, errText string) {
	a.Ended, a.EndRev, a.Outcome, a.Error = s.UpdatedAt, s.Rev, outcome, errText
}
