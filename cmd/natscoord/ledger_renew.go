package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// ledgerRenew is `ledger renew`: a claim extended under a new lease, and
// what that means for the lease it replaces (printRenewal).
func (a *app) ledgerRenew(lf *ledgerFlags) *cobra.Command {
	var cf claimFlags
	cmd := &cobra.Command{
		Use:   "renew KEY --owner O --fence F [--lease 30s]",
		Short: "Extend a claim to now + --lease under a new lease (refused for a stale fence)",
		Long: "renew extends the claim of --owner at --fence to now + --lease. It cannot renew the\n" +
			"lease the claim names in place: only the process that took a lease holds the secret that\n" +
			"renews it (a worker, or the ledger claim command that has exited). So renew takes a new\n" +
			"lease in --lease-bucket under the owner's name, which the server expires --lease after\n" +
			"this renewal unless renewed again, and writes the claim to name it:\n" +
			"  - the fence is unchanged: the owner completes or releases the claim with the same one;\n" +
			"  - the claim now lives as long as the new lease: run renew again before it ends, or the\n" +
			"    task is free for takeover;\n" +
			"  - the lease the claim named before is not deleted: it expires at its TTL unless its\n" +
			"    holder renews it. A worker holds one lease for all its claims and renews it for as\n" +
			"    long as it runs: renewing it no longer keeps this claim alive, nor lists the task\n" +
			"    under that worker in ledger workers, and once the new lease ends the task can be\n" +
			"    taken over while that worker may still be running it (fencing refuses its outcome;\n" +
			"    it does not stop the work). renew says so when the lease it replaced is live.\n" +
			"It prints the fence, the new lease and its end, and the lease it replaced; --json prints\n" +
			"the record as read after the renewal (its \"lease\" names the new lease).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.check(true, true); err != nil {
				return err
			}
			return a.withClaimLeases(cmd.Context(), lf, ledgerUpdate, cf.owner, func(ctx context.Context, l *kvledger.Ledger, lr *claimLeases) error {
				key := kvledger.IdempotencyKey(args[0])
				now := wall.Now()
				err := l.Renew(ctx, actorFor(cmd, lf, cf.owner), key, kvledger.OwnerID(cf.owner), kvledger.FenceToken(cf.fence), cf.lease, now)
				if err != nil {
					return noTask(lf, args[0], err)
				}
				if a.json {
					return a.printRecordJSON(ctx, l, key)
				}
				// The renewal is written: a failed read below is said in
				// its output, not made the command's error.
				r := renewal{taken: lr.taken()}
				if r.taken != "" {
					var prev kvledger.TaskState
					prev, r.known, r.readErr = replacedClaim(ctx, l, key, r.taken)
					r.old = prev.Lease
					if r.known {
						r.live, r.readErr = liveClaimantLease(ctx, l, lf.bucket, prev)
					}
				}
				return a.printRenewal(key, cf, now, r)
			})
		},
	}
	cf.ownerFenceFlags(cmd)
	cmd.Flags().DurationVar(&cf.lease, "lease", defaultClaimLease, "new lease, from now")
	return cmd
}

// renewal is what `ledger renew` prints of its leases.
type renewal struct {
	taken string         // the lease this process took, "" for none
	old   string         // the lease the record named before, "" for none
	known bool           // whether old was read (replacedClaim)
	live  *claimantLease // old, when it is a live claimant's lease
	// readErr is why old, or whether it is live, could not be read.
	readErr error
}

// replacedClaim returns the record the renewal that wrote taken into
// key's record wrote over, read from the record's kept writes
// (Ledger.History): its Lease is the lease the claim named before. A State
// read before Renew could name another lease: a concurrent renewal may
// write between the two, and Renew then writes over that one. found is
// false when the kept writes no longer hold the renewal.
func replacedClaim(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, taken string) (prev kvledger.TaskState, found bool, err error) {
	h, err := l.History(ctx, key)
	if err != nil {
		return kvledger.TaskState{}, false, err
	}
	// taken is a fresh key (kvledger.NewClaimLeaseKey): the first write
	// naming it is this renewal's.
	for i, t := range h {
		if t.Lease == taken && t.LastEvent == kvledger.RenewedEvent {
			if i == 0 {
				return kvledger.TaskState{}, false, nil
			}
			return h[i-1], true, nil
		}
	}
	return kvledger.TaskState{}, false, nil
}

// claimantLease is a live claimant's lease (kvledger.ClaimLeaseOwner)
// that a renewal replaced: its owner and its holder as kvlease reads it.
type claimantLease struct {
	owner  kvledger.OwnerID
	holder kvlease.Holder
}

// liveClaimantLease reads the lease prev, the claim a renewal replaced,
// names (Ledger.ClaimLease), when it is a claimant's lease of the ledger
// in bucket: nil when it is not one or has ended.
func liveClaimantLease(ctx context.Context, l *kvledger.Ledger, bucket string, prev kvledger.TaskState) (*claimantLease, error) {
	owner, ok := kvledger.ClaimLeaseOwner(bucket, prev.Lease)
	if !ok {
		return nil, nil
	}
	h, held, _, err := l.ClaimLease(ctx, prev)
	if err != nil || !held {
		return nil, err
	}
	return &claimantLease{owner: owner, holder: h}, nil
}

// printRenewal says what `ledger renew` wrote: the claim's fence, the new
// lease and its end, and the lease it replaced, with a warning when that
// lease is a live claimant's.
func (a *app) printRenewal(key kvledger.IdempotencyKey, cf claimFlags, now time.Time, r renewal) error {
	w := a.stdout
	if _, err := fmt.Fprintf(w, "%s renewed by %s: fence %d (unchanged: complete and release take it), lease until %s\n",
		escapeCell(string(key)), escapeCell(cf.owner), cf.fence, timeOrDash(now.Add(cf.lease))); err != nil {
		return err
	}
	if r.taken == "" {
		return nil // a ledger without a lease taker: the record's lease until is the claim's end
	}
	if _, err := fmt.Fprintf(w, "  new lease: %s, which the server expires %v after this renewal unless renewed again\n",
		escapeCell(r.taken), cf.lease); err != nil {
		return err
	}
	var err error
	switch {
	case !r.known && r.readErr != nil:
		_, err = fmt.Fprintf(w, "  replaced:  not known (reading the record's writes: %s)\n", escapeCell(r.readErr.Error()))
	case !r.known:
		_, err = fmt.Fprintln(w, "  replaced:  not known (the record's kept writes no longer hold this renewal)")
	case r.old == "":
		_, err = fmt.Fprintln(w, "  replaced:  no lease (the claim named none: its lease until was its end)")
	default:
		_, err = fmt.Fprintf(w, "  replaced:  %s, not renewed in place (only the process that took it can); it expires at its TTL\n"+
			"             unless its holder renews it, and renewing it no longer keeps this claim alive\n", escapeCell(r.old))
	}
	if err == nil && r.known && r.readErr != nil {
		_, err = fmt.Fprintf(w, "  warning:   whether %s is live could not be read (%s): if a running worker holds it, the\n"+
			"             task can be taken over once the new lease ends while that worker may still be running it\n",
			escapeCell(r.old), escapeCell(r.readErr.Error()))
	}
	if err != nil || r.live == nil {
		return err
	}
	c := r.live
	// The lease alone does not tell a worker's (renewed while it runs)
	// from one an exited ledger claim took (renewed by no one): both are
	// claimant leases under the owner's name, so the warning says "if".
	_, err = fmt.Fprintf(w, "  warning:   %s is live on the server, held by %s (pid %d on %s). If that is a running worker\n"+
		"             (a worker holds one lease for all its claims and renews it for as long as it runs), it may still be\n"+
		"             running this task: the claim now lives by the new lease only, and once that ends the task can be\n"+
		"             taken over while that worker may still be running it (fencing refuses its outcome; it does not stop\n"+
		"             the work)\n",
		escapeCell(r.old), escapeCell(string(c.owner)), c.holder.PID, escapeCell(c.holder.Host))
	return err
}
