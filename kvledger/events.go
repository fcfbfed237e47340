package kvledger

import "github.com/natscoord/natscoord/events"

// Event names. Every successful write is exactly one event, named after
// the transition that made it in the write's EventHeader (and the
// record's last_event).
const (
	// AdmittedEvent: Admit inserted or rebased a record (its Status may
	// be blocked when a need had already failed).
	AdmittedEvent events.Name = "ledger.admitted"
	// ClaimedEvent: Claim took a pending or stale record.
	ClaimedEvent events.Name = "ledger.claimed"
	// RenewedEvent: Renew extended the owner's lease.
	RenewedEvent events.Name = "ledger.renewed"
	// ReleasedEvent: Release, or the runtime without counting the attempt
	// (a drain, a handler's GiveBack: then with its LastError and a
	// RunAt), returned the record to pending.
	ReleasedEvent events.Name = "ledger.released"
	// TakenOverEvent: Takeover took a stale claim from its owner.
	TakenOverEvent events.Name = "ledger.taken_over"
	// CompletedEvent: Complete (or a runtime outcome) wrote completed.
	CompletedEvent events.Name = "ledger.completed"
	// FailedEvent: Complete (or a runtime outcome, or a claim that found
	// no attempt left) wrote failed. A name of its own, so a consumer
	// follows only failures by the header (EventHeader).
	FailedEvent events.Name = "ledger.failed"
	// BlockedEvent: a record was blocked by a failed or blocked need;
	// one per blocked record, written by that record's own write.
	BlockedEvent events.Name = "ledger.blocked"
)
