package kvledger

import "github.com/natscoord/natscoord/events"

// Event names of the task runtime's transitions and operator actions.
const (
	// RetriedEvent: the runtime's outcome (finish) gave a claim back to pending after a failed
	// attempt; RunAt is when it may run again, LastError why it failed.
	RetriedEvent events.Name = "ledger.retried"
	// ReopenedEvent: Reopen returned a failed record to pending with a
	// new fence.
	ReopenedEvent events.Name = "ledger.reopened"
	// UnblockedEvent: Reopen returned a record blocked by the reopened
	// key (directly or through other unblocked records) to pending; one
	// per record.
	UnblockedEvent events.Name = "ledger.unblocked"
	// CancelledEvent: a task ended cancelled (status failed, Cancelled
	// set): Cancel of a pending record, or the end of a claim that
	// Cancel asked to stop (CancelRequestedEvent) by its owner's
	// outcome, or by the claim that found its claimant's lease ended.
	// Its dependents are then blocked.
	CancelledEvent events.Name = "ledger.cancelled"
	// RunNowEvent: RunNow made a scheduled or retrying record ready at
	// once (RunAt cleared; attempts unchanged).
	RunNowEvent events.Name = "ledger.run_now"
	// SnoozedEvent: the runtime gave a claim back to pending because its
	// handler snoozed the task (worker.Snooze): RunAt is when it runs
	// again; the attempt is not counted, Snoozes is.
	SnoozedEvent events.Name = "ledger.snoozed"
	// CancelRequestedEvent: Cancel of a claimed record: it stays claimed,
	// with its owner, fence and lease, and CancelRequested set (phase
	// cancelling), until its handler returned (CancelledEvent then).
	CancelRequestedEvent events.Name = "ledger.cancel_requested"
	// DeletedEvent: Delete removed a final record. Its revision is the
	// delete's; the event carries the deleted record's status and fence.
	DeletedEvent events.Name = "ledger.deleted"
	// ScheduledEvent: Admit inserted a record whose RunAt is ahead of
	// the admission: it waits for its time (Admitted otherwise).
	ScheduledEvent events.Name = "ledger.scheduled"
	// RestoredEvent: Restore wrote a record from a snapshot (its record
	// names no transition of its own).
	RestoredEvent events.Name = "ledger.restored"
	// ExpiredEvent: the server removed a final record at the end of the
	// bucket's Retention (its expiry marker; no status).
	ExpiredEvent events.Name = "ledger.expired"
	// RetainedEvent: under a Retention, a final record written again
	// unchanged to change only when it expires: without its TTL while a
	// pending or claimed task needs it, and with the Retention again once
	// none does (kv_retention.go). No transition: its status is the
	// record's.
	RetainedEvent events.Name = "ledger.retained"
)

// EventNames lists every event the ledger writes, the one list for
// readers that must tell the ledger's names from anything else written
// (the record decoder, the dashboard's counters).
var EventNames = [...]events.Name{AdmittedEvent, ClaimedEvent, RenewedEvent, ReleasedEvent, TakenOverEvent, CompletedEvent,
	BlockedEvent, RetriedEvent, ReopenedEvent, UnblockedEvent, CancelledEvent, CancelRequestedEvent, DeletedEvent, ScheduledEvent,
	RestoredEvent, ExpiredEvent, RetainedEvent, RunNowEvent, SnoozedEvent}

// admissionEvent names the admission of rec: ScheduledEvent when its RunAt
// is ahead of the admission (it waits for its time), AdmittedEvent
// otherwise.
func admissionEvent(rec TaskState) events.Name {
	if rec.RunAt.After(rec.UpdatedAt) {
		return ScheduledEvent
	}
	return AdmittedEvent
}
