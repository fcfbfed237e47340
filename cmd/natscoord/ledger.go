package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// defaultLedgerBucket is the ledger bucket the CLI uses without --bucket.
const defaultLedgerBucket = "natscoord_ledger"

func init() { extraCommands = append(extraCommands, (*app).ledgerCommand) }

// ledgerFlags are shared by the ledger subcommands.
type ledgerFlags struct {
	bucket string
	actor  string
	// leaseBucket holds the leases that runtime claims name (ledger
	// claim and show read them: ledger_claim.go).
	leaseBucket string
}

func (a *app) ledgerCommand() *cobra.Command {
	var lf ledgerFlags
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Inspect and operate a kvledger task ledger",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&lf.bucket, "bucket", defaultLedgerBucket, "ledger bucket")
	pf.StringVar(&lf.actor, "actor", "natscoord-cli", "actor recorded on writes")
	pf.StringVar(&lf.leaseBucket, "lease-bucket", worker.DefaultLeaseBucket, "bucket of the leases that workers' claims name (natscoord work --lease-bucket)")
	cmd.AddCommand(a.ledgerLs(&lf), a.ledgerShow(&lf), a.ledgerAdmit(&lf), a.ledgerComplete(&lf),
		a.ledgerSnapshot(&lf), a.ledgerRestore(&lf), a.ledgerRm(&lf), a.ledgerWait(&lf),
		a.ledgerReopen(&lf), a.ledgerRunNow(&lf), a.ledgerCancel(&lf), a.ledgerPurge(&lf), a.ledgerStats(&lf), a.ledgerWorkers(&lf), a.ledgerMigrate(&lf))
	cmd.AddCommand(a.ledgerSchedule(&lf), a.ledgerPause(&lf), a.ledgerResume(&lf))
	cmd.AddCommand(a.ledgerClaimCommands(&lf)...)
	return cmd
}

// ledgerAccess is what a command does with the ledger, which decides
// what opening it may create.
type ledgerAccess int

const (
	// ledgerInspect reads an existing ledger: a missing bucket is an error,
	// and nothing is created or written.
	ledgerInspect ledgerAccess = iota
	// ledgerUpdate writes to an existing ledger (each write is its event,
	// kept in the bucket's stream).
	ledgerUpdate
	// ledgerCreate is ledgerUpdate that also creates the bucket when missing.
	ledgerCreate
)

// withLedger connects and opens the ledger for access, runs fn and closes
// it.
func (a *app) withLedger(parent context.Context, lf *ledgerFlags, access ledgerAccess, fn func(context.Context, *kvledger.Ledger) error) error {
	return a.withJS(parent, func(ctx context.Context, js jetstream.JetStream) error {
		return useLedger(ctx, js, lf.bucket, access, fn)
	})
}

// useLedger opens the ledger in bucket on js, as withLedger does, runs fn
// with it and closes it.
func useLedger(ctx context.Context, js jetstream.JetStream, bucket string, access ledgerAccess, fn func(context.Context, *kvledger.Ledger) error) error {
	l, err := openLedger(ctx, js, bucket, access)
	if err != nil {
		return err
	}
	defer closeStore(l)
	return fn(ctx, l)
}

// closeStore closes the store of l, a ledger openLedger opened (a
// KVStore): its reply subscription, before the connection closes. Its
// caller defers it once nothing writes through l any more (a worker
// running on l closed first).
func closeStore(l *kvledger.Ledger) {
	if s, ok := l.Store().(*kvledger.KVStore); ok {
		s.Close()
	}
}

// openLedger opens the ledger in bucket for access (see ledgerAccess).
func openLedger(ctx context.Context, js jetstream.JetStream, bucket string, access ledgerAccess, opts ...kvledger.Option) (*kvledger.Ledger, error) {
	store, err := openStore(ctx, js, bucket, access == ledgerCreate)
	if err != nil {
		return nil, err
	}
	return kvledger.New(store, opts...)
}

// openStore opens the ledger store in bucket. Without create, a missing
// bucket is a noBucketError and nothing is created.
func openStore(ctx context.Context, js jetstream.JetStream, bucket string, create bool) (*kvledger.KVStore, error) {
	if !create {
		if _, err := bindExisting(ctx, js, bucket); err != nil {
			return nil, err
		}
	}
	return kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: bucket})
}

// lsFlags are the filters and columns of `ledger ls`.
type lsFlags struct {
	filterFlags
	// status is --status, a filter by stored status before --phase was
	// the one vocabulary: hidden, and warned about.
	status []string
	limit  int
	wide   bool
}

// lsHelp is the help of `ledger ls`.
var lsHelp = `ls lists the tasks of the ledger, each with its KIND, its PHASE (kvledger's name for
the state a person asks about: a pending task waiting for its run-at is scheduled, or
retrying after a failed attempt; running is claimed, and cancelling once an operator
cancelled it while it runs; cancelled is an operator's cancel), its ATTEMPTS and the
first line of its last ERROR, cut to ` + fmt.Sprint(errCellWidth) + ` columns.
  phases: ` + nameList(kvledger.Phases[:5]) + `,
          ` + nameList(kvledger.Phases[5:]) + `

ATTEMPTS is N/MAX: the attempts counted, and the most the task is allowed: its own
--max-attempts, else the default of ` + fmt.Sprint(kvledger.DefaultMaxAttempts) + ` (a worker started with another --max-attempts
applies its own). --wide adds SEQ (the submission sequence), FENCE (the claim's
fencing token) and REV (the record's revision).

--phase picks tasks by phase (repeated or comma-separated; "claimed" names running),
--kind by kind. --limit N prints the first N tasks that match and says on stderr how
many more there were. --json prints the records, each with its stored "status" and
its "phase". A stored value that is not a record is listed as ` + corruptStatus + `
unless a phase or kind filter is given.

` + filterHelp

func (a *app) ledgerLs(lf *ledgerFlags) *cobra.Command {
	var lsf lsFlags
	cmd := &cobra.Command{
		Use:   "ls [--phase P,...] [--kind K] [--prefix P] [--under P] [--schedule S] [--limit N] [--wide]",
		Short: "List the tasks of the ledger: kind, phase, attempts and last error; filter by phase, kind and key",
		Long:  lsHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := lsf.filter(a.stderr, "ledger ls")
			if err != nil {
				return err
			}
			if len(lsf.status) > 0 {
				fmt.Fprintln(a.stderr, `natscoord: ledger ls: --status is deprecated: use --phase, or read "status" in --json`)
				if err := f.addStatuses("status", lsf.status); err != nil {
					return err
				}
			}
			if lsf.limit < 0 {
				return fmt.Errorf("--limit must be 0 (no limit) or more, not %d", lsf.limit)
			}
			err = a.withSnapshot(cmd.Context(), lf, func(snap kvledger.Snapshot, bad *kvledger.CorruptRecordsError) error {
				return a.printLedger(lf, snap, bad, f, lsf)
			})
			if defaultBucketMissing(cmd, err) {
				// Nothing was ever admitted on this server: an empty list, as
				// lease ls and lock ls print.
				return a.printLedger(lf, kvledger.Snapshot{}, nil, f, lsf)
			}
			return err
		},
	}
	lsf.register(cmd, "list")
	fl := cmd.Flags()
	fl.StringSliceVar(&lsf.status, "status", nil, "deprecated: --phase")
	_ = fl.MarkHidden("status")
	fl.IntVar(&lsf.limit, "limit", 0, "list at most this many tasks (0: all)")
	fl.BoolVar(&lsf.wide, "wide", false, "add the SEQ, FENCE and REV columns")
	return cmd
}

// errCellWidth bounds the ERROR column of `ledger ls`, in display
// columns: the first line of the error, cut (ledger show prints it whole).
const errCellWidth = 60

// lsColumns are the columns of `ledger ls`, and with --wide.
var (
	lsColumns     = []string{"KEY", "KIND", "PHASE", "ATTEMPTS", "OWNER", "NEEDS", "BLOCKED-BY", "ERROR"}
	lsWideColumns = []string{"KEY", "KIND", "PHASE", "ATTEMPTS", "SEQ", "OWNER", "FENCE", "NEEDS", "BLOCKED-BY", "REV", "ERROR"}
)

// lsRow is t's row of `ledger ls`, its columns those of lsWideColumns
// when wide, else lsColumns.
func lsRow(t listedTask, wide bool) []string {
	attempts := strconv.Itoa(t.Attempts) + "/" + strconv.Itoa(kvledger.AttemptLimit(t.TaskState, kvledger.DefaultMaxAttempts))
	last, _, _ := strings.Cut(t.LastError, "\n")
	errCell := truncateCell(escapeCell(strings.TrimSpace(last)), errCellWidth)
	if !wide {
		return []string{string(t.Key), dash(t.Kind), string(t.Phase), attempts, dash(string(t.Owner)),
			dash(joinKeys(t.Needs)), dash(string(t.BlockedBy)), dash(errCell)}
	}
	return []string{string(t.Key), dash(t.Kind), string(t.Phase), attempts, strconv.FormatUint(uint64(t.Sequence), 10),
		dash(string(t.Owner)), strconv.FormatUint(uint64(t.Fence), 10), dash(joinKeys(t.Needs)),
		dash(string(t.BlockedBy)), strconv.FormatUint(t.Rev, 10), dash(errCell)}
}

// printLedger prints the tasks of a snapshot that f picks, then the
// corrupt records bad names that f picks, as `ledger ls` lists them: at
// most lsf.limit of the two together (0: all), and the count says how
// many matched, the corrupt ones included.
func (a *app) printLedger(lf *ledgerFlags, snap kvledger.Snapshot, bad *kvledger.CorruptRecordsError, f taskFilter, lsf lsFlags) error {
	limit := lsf.limit
	now := wall.Now()
	tasks := make([]listedTask, 0, len(snap.Tasks))
	matched := 0
	for _, t := range snap.Tasks {
		p := t.Phase(now)
		if !f.match(t, p) {
			continue
		}
		matched++
		if limit == 0 || matched <= limit {
			tasks = append(tasks, listedTask{TaskState: t, Phase: p})
		}
	}
	listed := len(tasks)
	if bad = f.corrupt(bad); bad != nil {
		matched += len(bad.Records)
		if room := limit - listed; limit > 0 && room < len(bad.Records) {
			bad = &kvledger.CorruptRecordsError{Records: bad.Records[:room]}
		}
		listed += len(bad.Records)
		if len(bad.Records) == 0 {
			bad = nil
		}
	}
	if matched > listed {
		fmt.Fprintf(a.stderr, "natscoord: ledger ls: %d of %d matching tasks listed (--limit %d)\n", listed, matched, limit)
	}
	if a.json {
		return corruptAfter(writeJSON(a.stdout, tasks), lf.bucket, bad)
	}
	rows := make([][]string, 0, len(tasks))
	for _, t := range tasks {
		rows = append(rows, lsRow(t, lsf.wide))
	}
	if bad != nil {
		rows = append(rows, corruptRows(bad, lsf.wide)...)
	}
	header := lsColumns
	if lsf.wide {
		header = lsWideColumns
	}
	return writeTable(a.stdout, header, rows)
}

func (a *app) ledgerShow(lf *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show KEY",
		Short: "Show one task's record and its attempts",
		Long: "show prints one task's record, then its attempts: each one's number (of the task's\n" +
			"max attempts), outcome, owner, fence, start and end, and the error it ended with.\n" +
			"--json prints the record with its attempts under \"attempt_history\".\n\n" +
			"The attempts are read from the writes the ledger bucket keeps of the record (its last 64;\n" +
			"a bucket of the older one-write layout shows only the attempt its last write ended until\n" +
			"`natscoord ledger migrate` runs).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withClaimLedger(cmd.Context(), lf, ledgerInspect, "", func(ctx context.Context, l *kvledger.Ledger) error {
				// One read serves both: the record is the last of the
				// writes its attempts are read from.
				h, err := l.History(ctx, kvledger.IdempotencyKey(args[0]))
				if err != nil {
					return err
				}
				if len(h) == 0 {
					return errNoTask(lf.bucket, args[0])
				}
				t := h[len(h)-1]
				until, err := claimExpiry(ctx, l, t)
				if err != nil {
					return err
				}
				as := kvledger.Attempts(h)
				if a.json {
					if as == nil {
						as = []kvledger.Attempt{} // "attempt_history": [] rather than null
					}
					return writeJSON(a.stdout, shownTask{TaskState: t, AttemptHistory: as})
				}
				if err := a.printTask(t, until); err != nil {
					return err
				}
				return a.printAttempts(as)
			})
		},
	}
}

// printTask prints t; until is the "lease until" cell (claimExpiry).
func (a *app) printTask(t kvledger.TaskState, until string) error {
	if a.json {
		return writeJSON(a.stdout, t)
	}
	return writeTable(a.stdout, []string{"FIELD", "VALUE"}, append([][]string{
		{"key", string(t.Key)},
		{"phase", string(t.Phase(wall.Now()))},
		{"sequence", strconv.FormatUint(uint64(t.Sequence), 10)},
		{"owner", dash(string(t.Owner))},
		{"fence", strconv.FormatUint(uint64(t.Fence), 10)},
		{"lease until", until},
		{"needs", dash(joinKeys(t.Needs))},
		{"blocked by", dash(string(t.BlockedBy))},
		{"task", compactJSON(t.Task)},
		{"revision", strconv.FormatUint(t.Rev, 10)},
		{"created", dash(string(t.CreatedBy)) + " " + timeOrDash(t.CreatedAt)},
		{"updated", dash(string(t.UpdatedBy)) + " " + timeOrDash(t.UpdatedAt)},
		{"last event", dash(string(t.LastEvent))},
	}, runtimeRows(t)...))
}

func (a *app) ledgerAdmit(lf *ledgerFlags) *cobra.Command {
	var (
		seq         uint64
		needs, task string
		rt          admitRuntime
		create      bool
		noKind      bool
	)
	cmd := &cobra.Command{
		Use:   "admit KEY --kind K [--seq N] [--needs a,b] [--task JSON|@FILE|-] [--run-at T | --delay D]",
		Short: "Admit a task once per key (a duplicate or older sequence is not admitted)",
		Long: "admit admits a task once per key (a duplicate or older sequence is not admitted).\n" +
			"The default ledger bucket is created when missing; a bucket named with --bucket must\n" +
			"exist unless --create is given (a misspelt name is refused, not made a new ledger).\n\n" +
			"--seq protects a task from stale resubmissions: a submission with a higher sequence\n" +
			"replaces a pending task's payload and needs (a rebase), while an equal or lower one\n" +
			"changes nothing, so a retried or delayed submission of an older version never\n" +
			"overwrites a newer one. It defaults to 1: resubmitting the same key is then a no-op.\n\n" +
			"It prints the record as this admission wrote it (a worker may claim the task at once;\n" +
			"`ledger show` reads it now). A key that already holds a record it did not change (an\n" +
			"idempotent hit) prints \"not admitted\", why, and the state that record holds.\n" +
			"--json prints {\"admitted\": bool, \"task\": record}, the record written or found.\n\n" +
			"--kind names the handler that runs the task: a worker runs only the kinds it handles\n" +
			"(natscoord work --kind K, a Go worker's Handle). A task admitted without one is run by\n" +
			"no such worker, so admit warns on stderr, unless --no-kind says it is meant: a task an\n" +
			"owner claims and completes by hand (ledger claim, ledger complete).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			if key == "" {
				return errors.New("ledger admit: empty key")
			}
			ns, err := parseNeeds(key, needs)
			if err != nil {
				return err
			}
			payload, err := readTaskArg(a.stdin, task)
			if err != nil {
				return err
			}
			if noKind && rt.kind != "" {
				return errors.New("ledger admit: --no-kind and --kind exclude each other")
			}
			sub, err := rt.submission(key, seq, payload, ns)
			if err != nil {
				return err
			}
			access := ledgerCreate
			if cmd.Flags().Changed("bucket") && !create {
				access = ledgerUpdate
			}
			err = a.withLedger(cmd.Context(), lf, access, func(ctx context.Context, l *kvledger.Ledger) error {
				rb, err := prepareRebase(ctx, l, kvledger.IdempotencyKey(key), kvledger.Sequence(seq),
					!cmd.Flags().Changed("task"), !cmd.Flags().Changed("needs"), payload, ns)
				if err != nil {
					return err
				}
				sub.Task, sub.Needs = rb.task, rb.needs
				// The record the admission wrote, or the one that made it a
				// no-op: a read after it could show a worker's claim or a
				// later state instead of what this admission did.
				adm, err := l.SubmitResult(ctx, kvledger.Actor(lf.actor), sub)
				if err != nil {
					return err
				}
				t, ok := adm.Record, adm.Admitted
				// A need without a record is taken (it may be admitted
				// later), but said: the task cannot run until it is.
				var missing []kvledger.IdempotencyKey
				if ok {
					if missing, err = l.Absent(ctx, t.Needs...); err != nil {
						return err
					}
				}
				if a.json {
					out := map[string]any{"admitted": ok, "task": t}
					if ok && len(rb.kept) > 0 {
						out["kept"] = rb.kept
					}
					if len(missing) > 0 {
						out["missing_needs"] = missing
					}
					return writeJSON(a.stdout, out)
				}
				if ok && t.Kind == "" && !noKind {
					fmt.Fprintln(a.stderr, "natscoord: ledger admit: "+escapeCell(noKindNote(t.Key)))
				}
				if len(missing) > 0 {
					fmt.Fprintln(a.stderr, "natscoord: ledger admit: "+escapeCell(missingNote(t.Key, missing)))
				}
				_, err = fmt.Fprintf(a.stdout, "%s %s: %s%s, fence %d, revision %d%s\n", escapeCell(key), rb.verb(ok, kvledger.Sequence(seq), t),
					stateText(t, wall.Now()), ownerText(t), t.Fence, t.Rev, rb.note(ok))
				return err
			})
			if nb := (noBucketError{}); errors.As(err, &nb) {
				return fmt.Errorf("%w (add --create to create it)", err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&create, "create", false, "create the --bucket ledger when it does not exist")
	f.BoolVar(&noKind, "no-kind", false, "admit without a kind on purpose: no worker runs it (claim it with ledger claim); silences the warning")
	f.Uint64Var(&seq, "seq", 1, "submission sequence: a higher one rebases a pending task, an equal or lower one changes nothing")
	f.StringVar(&needs, "needs", "", "comma-separated keys this task needs (a rebase without it keeps the stored ones)")
	f.StringVar(&task, "task", "", "task payload: JSON, @FILE or - (stdin); null for none (a rebase without it keeps the stored one)")
	rt.register(cmd)
	return cmd
}

func (a *app) ledgerComplete(lf *ledgerFlags) *cobra.Command {
	var (
		owner, status string
		fence         uint64
	)
	cmd := &cobra.Command{
		Use:   "complete KEY --owner O --fence F --status completed|failed",
		Short: "Finish a claimed task as its owner (refused for a stale fence)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := parseStatus(status)
			if err != nil {
				return err
			}
			if owner == "" {
				return errors.New("--owner must not be empty")
			}
			return a.withLedger(cmd.Context(), lf, ledgerUpdate, func(ctx context.Context, l *kvledger.Ledger) error {
				key := kvledger.IdempotencyKey(args[0])
				err := l.Complete(ctx, actorFor(cmd, lf, owner), key, kvledger.OwnerID(owner), kvledger.FenceToken(fence), st, wall.Now())
				if err != nil {
					return noTask(lf, args[0], err)
				}
				if a.json {
					return a.printRecordJSON(ctx, l, key)
				}
				// Print who acted, from the call that succeeded, never the
				// record's owner as read afterwards.
				_, err = fmt.Fprintf(a.stdout, "%s %s by %s (fence %d)\n", args[0], st, owner, fence)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&owner, "owner", "", "owner of the claim (required)")
	f.Uint64Var(&fence, "fence", 0, "fence token of the claim (required)")
	f.StringVar(&status, "status", "", "completed or failed (required)")
	for _, n := range []string{"owner", "fence", "status"} {
		_ = cmd.MarkFlagRequired(n)
	}
	return cmd
}

func joinKeys(ks []kvledger.IdempotencyKey) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339Nano)
}
