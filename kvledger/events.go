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
	// CompletedEvent: Complete ended a claim, whatever its outcome: the
	// record is completed or failed (the event's Status, and the write's
	// StatusHeader, say which), as the seed ledger's CompletedEvent. The
	// runtime's final outcome of an attempt is its Complete and has this
	// name too, as has its claim that finds the last attempt lost (see
	// "Events" in doc.go).
	CompletedEvent events.Name = "ledger.completed"
	// BlockedEvent: a record was blocked by a failed or blocked need;
	// one per blocked record, written by that record's own write.
	BlockedEvent events.Name = "ledger.blocked"
)

// renamedEvents maps names earlier versions wrote to the names the same
// transitions have now, so that their stored writes read as the writes of
// today: "ledger.failed" was a failed Complete (or runtime outcome)
// before it became CompletedEvent with status failed.
var renamedEvents = map[events.Name]events.Name{"ledger.failed": CompletedEvent}

// currentEvent is n as this version names it (renamedEvents).
func currentEvent(n events.Name) events.Name {
	if c, ok := renamedEvents[n]; ok {
		return c
	}
	return n
}
