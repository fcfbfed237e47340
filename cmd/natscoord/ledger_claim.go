package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvlease"
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
	if lease {
		// The claim holds a kvlease lease: its TTL bounds (1s..24h).
		if err := kvlease.ValidateTTL(cf.lease); err != nil {
			return fmt.Errorf("--lease: %w", err)
		}
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
			"The claim holds a lease in --lease-bucket that the server expires after --lease unless\n" +
			"ledger renew replaces it, so workers (natscoord work) and other claimants judge it by the\n" +
			"server, also after this command has exited.\n" +
			"With --takeover it takes a claimed task whose claim has ended; the earlier owner's fence\n" +
			"is refused from then on. A claim that names a lease has ended only when that lease is gone\n" +
			"on the server; an older claim without one when its lease until (this machine's clock)\n" +
			"has passed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.check(true, false); err != nil {
				return err
			}
			return a.withClaimLedger(cmd.Context(), lf, ledgerUpdate, cf.owner, func(ctx context.Context, l *kvledger.Ledger) error {
				key := kvledger.IdempotencyKey(args[0])
				op := l.Claim
				if takeover {
					op = l.Takeover
				}
				fence, err := op(ctx, actorFor(cmd, lf, cf.owner), key, kvledger.OwnerID(cf.owner), cf.lease, wall.Now())
				if err != nil {
					return noTask(lf, args[0], err)
				}
				return a.printClaim(ctx, l, key, "claimed by", cf.owner, leaseDetail(fence))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cf.owner, "owner", "", "owner taking the task (required)")
	f.DurationVar(&cf.lease, "lease", defaultClaimLease, "how long the claim lasts without a renewal (1s..24h)")
	f.BoolVar(&takeover, "takeover", false, "take a claimed task whose claim has ended")
	_ = cmd.MarkFlagRequired("owner")
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
				err := l.Release(ctx, actorFor(cmd, lf, cf.owner), key, kvledger.OwnerID(cf.owner), kvledger.FenceToken(cf.fence), wall.Now())
				if err != nil {
					return noTask(lf, args[0], err)
				}
				return a.printClaim(ctx, l, key, "released by", cf.owner, func(t kvledger.TaskState) string {
					return fmt.Sprintf("%s, fence %d", t.Phase(wall.Now()), t.Fence)
				})
			})
		},
	}
	cf.ownerFenceFlags(cmd)
	return cmd
}

// printClaim prints key's record after an owner's claim or
// release: the record with --json, else the line "KEY VERB OWNER: " and
// what detail says of the record.
func (a *app) printClaim(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, verb, owner string, detail func(kvledger.TaskState) string) error {
	if a.json {
		return a.printRecordJSON(ctx, l, key)
	}
	t, _, err := l.State(ctx, key)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s %s %s: %s\n", escapeCell(string(key)), verb, escapeCell(owner), detail(t))
	return err
}

// printRecordJSON prints key's record, as read now, as JSON: the --json
// output of the commands that write an owner's claim (claim, renew,
// release, complete).
func (a *app) printRecordJSON(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey) error {
	t, _, err := l.State(ctx, key)
	if err != nil {
		return err
	}
	return writeJSON(a.stdout, t)
}

// leaseDetail is printClaim's detail after a claim: the fence the claim
// returned, and the lease it wrote.
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

// withClaimLedger is withLedger for the commands that judge, make or
// show a claim (claim, renew, show): the ledger reads the lease a claim
// names from --lease-bucket (kvledger.WithLeases), so a takeover finds
// that lease gone on the server and show prints its real expiry. With
// owner set (claim, renew) the claim it makes holds a lease there too,
// under owner's name, which the server expires --lease after the claim
// or renewal unless renewed: workers and other claimants judge it by
// that, not by a clock, also after this process has exited.
func (a *app) withClaimLedger(parent context.Context, lf *ledgerFlags, access ledgerAccess, owner string, fn func(context.Context, *kvledger.Ledger) error) error {
	return a.withClaimLeases(parent, lf, access, owner, func(ctx context.Context, l *kvledger.Ledger, _ *claimLeases) error {
		return fn(ctx, l)
	})
}

// withClaimLeases is withClaimLedger that also passes fn the lease reader
// (and taker) the ledger uses, which knows the leases it took.
func (a *app) withClaimLeases(parent context.Context, lf *ledgerFlags, access ledgerAccess, owner string,
	fn func(context.Context, *kvledger.Ledger, *claimLeases) error) error {
	return a.withJS(parent, func(ctx context.Context, js jetstream.JetStream) error {
		lr := &claimLeases{js: js, bucket: lf.leaseBucket, holder: owner}
		defer lr.close()
		var r kvledger.LeaseReader = lr
		if owner != "" {
			r = (*claimLeaseTaker)(lr)
		}
		l, err := openLedger(ctx, js, lf.bucket, access, kvledger.WithLeases(r))
		if err != nil {
			return err
		}
		defer closeStore(l)
		return fn(ctx, l, lr)
	})
}

// claimLeases reads lease keys from the lease bucket, which it binds (and
// never creates) the first time a record names a lease: a command whose
// records name none touches no lease bucket.
type claimLeases struct {
	js     jetstream.JetStream
	bucket string
	holder string // the public holder id of leases it takes

	mu   sync.Mutex
	m    *kvlease.Manager
	took string // the key of the last lease taken (claimLeaseTaker)
}

// taken returns the key of the last lease taken, "" for none.
func (c *claimLeases) taken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.took
}

// manager returns the lease manager, binding the bucket on first use;
// create allows creating it (a claim's lease may be the first).
func (c *claimLeases) manager(ctx context.Context, create bool) (*kvlease.Manager, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m != nil {
		return c.m, nil
	}
	if !create {
		if _, err := bindExisting(ctx, c.js, c.bucket); err != nil {
			return nil, fmt.Errorf("lease bucket (--lease-bucket): %w", err)
		}
	}
	m, err := kvlease.NewManager(ctx, c.js, kvlease.Config{Bucket: c.bucket, Holder: c.holder})
	if err != nil {
		return nil, err
	}
	c.m = m
	return m, nil
}

func (c *claimLeases) HolderOfKey(ctx context.Context, key string) (kvlease.Holder, bool, error) {
	m, err := c.manager(ctx, false)
	if err != nil {
		return kvlease.Holder{}, false, fmt.Errorf("the lease %q a claim names: %w", key, err)
	}
	return m.HolderOfKey(ctx, key)
}

// claimLeaseTaker is claimLeases that also takes leases for the claims
// the command makes (kvledger.LeaseTaker).
type claimLeaseTaker claimLeases

func (c *claimLeaseTaker) HolderOfKey(ctx context.Context, key string) (kvlease.Holder, bool, error) {
	return (*claimLeases)(c).HolderOfKey(ctx, key)
}

func (c *claimLeaseTaker) TryAcquireKeyDetached(ctx context.Context, key string, ttl time.Duration) (*kvlease.Guard, bool, error) {
	m, err := (*claimLeases)(c).manager(ctx, true)
	if err != nil {
		return nil, false, err
	}
	g, ok, err := m.TryAcquireKeyDetached(ctx, key, ttl)
	if ok && err == nil {
		c.mu.Lock()
		c.took = g.Key()
		c.mu.Unlock()
	}
	return g, ok, err
}

func (c *claimLeases) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m != nil {
		_ = c.m.Close(context.Background()) // it holds no lease: nothing to release
	}
}

// claimExpiry is show's "lease until": for a worker's claim, the server's
// expiry of the lease it names (the worker renews the lease, not the
// record, so the record's LeaseUntil is only when the claim was made),
// else the record's LeaseUntil.
func claimExpiry(ctx context.Context, l *kvledger.Ledger, t kvledger.TaskState) (string, error) {
	h, held, named, err := l.ClaimLease(ctx, t)
	switch {
	case err != nil:
		return "", err
	case !named:
		return timeOrDash(t.LeaseUntil), nil
	case !held:
		return "ended (lease " + t.Lease + " is gone: free for takeover)", nil
	}
	return timeOrDash(h.Expires) + " (server, lease " + t.Lease + ")", nil
}
