package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// defaultClaimLease is the lease of `ledger claim` and `ledger renew`
// without --lease.
const defaultClaimLease = 30 * time.Second

// claimFlags are the flags of claim, renew and release.
type claimFlags struct {
	owner string
	fence uint64
	lease time.Duration
}

// ownerFenceFlags registers the required --owner and --fence of a
// command acting on the caller's own claim (renew, release).
func (cf *claimFlags) ownerFenceFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&cf.owner, "owner", "", "owner of the claim (required)")
	f.Uint64Var(&cf.fence, "fence", 0, "fence token of the claim (required)")
	_ = cmd.MarkFlagRequired("owner")
	_ = cmd.MarkFlagRequired("fence")
}

// ledgerClaimCommands are the owner's side of a task from the command
// line: claim (or take over) a task, renew its lease, give it back. With
// `ledger complete` they let a shell script be a worker.
func (a *app) ledgerClaimCommands(lf *ledgerFlags) []*cobra.Command {
	return []*cobra.Command{a.ledgerClaim(lf), a.ledgerRenew(lf), a.ledgerRelease(lf)}
}

// actorFor is the actor recorded on an owner's write: --actor when given,
// else the owner.
func actorFor(cmd *cobra.Command, lf *ledgerFlags, owner string) kvledger.Actor {
	if cmd.Flags().Changed("actor") {
		return kvledger.Actor(lf.actor)
	}
	return kvledger.Actor(owner)
}

// check refuses bad flags before any connection: an empty --owner, then,
// where the command takes them, a lease that is not positive or above
// kvledger.MaxLease and a zero fence. The ledger does not check them all up front (Release takes an
// empty owner whose fence matches an ownerless record, and answers "not
// claimed"), and these errors name the flag.
func (cf *claimFlags) check(lease, fence bool) error {
	if cf.owner == "" {
		return errors.New("--owner must not be empty")
	}
	if lease && cf.lease <= 0 {
		return fmt.Errorf("--lease must be positive, got %v", cf.lease)
	}
	if lease && cf.lease > kvledger.MaxLease {
		return fmt.Errorf("--lease %v is above the %v limit; renew a longer claim", cf.lease, kvledger.MaxLease)
	}
	if fence && cf.fence == 0 {
		return errors.New("--fence must be the claim's fence token (printed by ledger claim)")
	}
	return nil
}

func (a *app) ledgerClaim(lf *ledgerFlags) *cobra.Command {
	var (
		cf       claimFlags
		takeover bool
	)
	cmd := &cobra.Command{
		Use:   "claim KEY --owner O [--lease 30s] [--takeover]",
		Short: "Claim a pending task for an owner; prints the fence token that renew, release and complete need",
		Long: "claim gives a pending task to --owner for --lease and prints its new fence token. A task\n" +
			"one of whose needs (directly or transitively) failed or is blocked is refused and\n" +
			"written blocked. Whether the needs have completed is the caller's to check.\n" +
			"With --takeover it takes a claimed task whose lease has run out (judged against this\n" +
			"machine's clock); the earlier owner's fence is refused from then on.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.check(true, false); err != nil {
				return err
			}
			return a.withLedger(cmd.Context(), lf, ledgerUpdate, func(ctx context.Context, l *kvledger.Ledger) error {
				key := kvledger.IdempotencyKey(args[0])
				op := l.Claim
				if takeover {
					op = l.Takeover
				}
				fence, err := op(ctx, actorFor(cmd, lf, cf.owner), key, kvledger.OwnerID(cf.owner), cf.lease, time.Now())
				if err != nil {
					return noTask(lf, args[0], err)
				}
				return a.printClaim(ctx, l, key, "claimed by", cf.owner, leaseDetail(fence))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cf.owner, "owner", "", "owner taking the task (required)")
	f.DurationVar(&cf.lease, "lease", defaultClaimLease, "how long the claim lasts without a renewal")
	f.BoolVar(&takeover, "takeover", false, "take a claimed task whose lease has run out")
	_ = cmd.MarkFlagRequired("owner")
	return cmd
}

func (a *app) ledgerRenew(lf *ledgerFlags) *cobra.Command {
	var cf claimFlags
	cmd := &cobra.Command{
		Use:   "renew KEY --owner O --fence F [--lease 30s]",
		Short: "Extend a claim's lease to now + --lease (refused for a stale fence)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.check(true, true); err != nil {
				return err
			}
			return a.withLedger(cmd.Context(), lf, ledgerUpdate, func(ctx context.Context, l *kvledger.Ledger) error {
				key := kvledger.IdempotencyKey(args[0])
				err := l.Renew(ctx, actorFor(cmd, lf, cf.owner), key, kvledger.OwnerID(cf.owner), kvledger.FenceToken(cf.fence), cf.lease, time.Now())
				if err != nil {
					return noTask(lf, args[0], err)
				}
				return a.printClaim(ctx, l, key, "renewed by", cf.owner, leaseDetail(kvledger.FenceToken(cf.fence)))
			})
		},
	}
	cf.ownerFenceFlags(cmd)
	cmd.Flags().DurationVar(&cf.lease, "lease", defaultClaimLease, "new lease, from now")
	return cmd
}

func (a *app) ledgerRelease(lf *ledgerFlags) *cobra.Command {
	var cf claimFlags
	cmd := &cobra.Command{
		Use:   "release KEY --owner O --fence F",
		Short: "Give a claim back: the task is pending again (refused for a stale fence)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.check(false, true); err != nil {
				return err
			}
			return a.withLedger(cmd.Context(), lf, ledgerUpdate, func(ctx context.Context, l *kvledger.Ledger) error {
				key := kvledger.IdempotencyKey(args[0])
				err := l.Release(ctx, actorFor(cmd, lf, cf.owner), key, kvledger.OwnerID(cf.owner), kvledger.FenceToken(cf.fence), time.Now())
				if err != nil {
					return noTask(lf, args[0], err)
				}
				return a.printClaim(ctx, l, key, "released by", cf.owner, func(t kvledger.TaskState) string {
					return fmt.Sprintf("%s, fence %d", t.Status, t.Fence)
				})
			})
		},
	}
	cf.ownerFenceFlags(cmd)
	return cmd
}

// printClaim prints key's record after an owner's claim, renewal or
// release: the record with --json, else the line "KEY VERB OWNER: " and
// what detail says of the record.
func (a *app) printClaim(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, verb, owner string, detail func(kvledger.TaskState) string) error {
	t, _, err := l.State(ctx, key)
	if err != nil {
		return err
	}
	if a.json {
		return writeJSON(a.stdout, t)
	}
	_, err = fmt.Fprintf(a.stdout, "%s %s %s: %s\n", escapeCell(string(key)), verb, escapeCell(owner), detail(t))
	return err
}

// leaseDetail is printClaim's detail after a claim or renewal: the fence
// the call returned or used, and the lease it wrote.
func leaseDetail(fence kvledger.FenceToken) func(kvledger.TaskState) string {
	return func(t kvledger.TaskState) string {
		return fmt.Sprintf("fence %d, lease until %s", fence, timeOrDash(t.LeaseUntil))
	}
}

// noTask names the ledger and key when err is kvledger.ErrNoKey.
func noTask(lf *ledgerFlags, key string, err error) error {
	if errors.Is(err, kvledger.ErrNoKey) {
		return errNoTask(lf.bucket, key)
	}
	return err
}

// errNoTask is the error for a key without a record in the ledger bucket.
func errNoTask(bucket, key string) error {
	return fmt.Errorf("ledger %q: no task %q", bucket, key)
}
