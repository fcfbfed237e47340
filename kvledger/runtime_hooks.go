package kvledger

import "github.com/natscoord/natscoord/kvledger/internal/ledgerrt"

// The runtime's protocol (package worker's claim, outcome and
// retry-or-fail decision) is not part of the Ledger's exported API: it
// is bound here to ledgerrt's hooks, which only kvledger and the
// packages below it (kvledger/worker) can import. See ledgerrt's package
// doc for why hooks; each function keeps the type its hook's comment
// gives, which package worker asserts when it loads.
func init() {
	ledgerrt.ClaimLeasedFrom = (*Ledger).claimLeasedFrom
	ledgerrt.Finish = (*Ledger).finish
	ledgerrt.FinishAsync = (*Ledger).finishAsync
	ledgerrt.Pipelined = (*Ledger).pipelined
	ledgerrt.AttemptsUsed = attemptsUsed
	ledgerrt.RetryOrFail = retryOrFail
}
