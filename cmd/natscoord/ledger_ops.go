package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// An operator action changes tasks named by key or chosen by a filter:
// `ledger reopen`, `ledger cancel`, `ledger rm` and `ledger purge`. Each
// change is the ledger's own operation (Reopen, Cancel, Delete): one
// compare-and-set on the record that leaves an event, so a task that
// moved between the listing and the write is refused, never overwritten.

// opSelect is how an action picks its tasks: keys, or a filter over
// every record (phase, kind, key prefix), never both.
type opSelect struct {
	phases []string
	kind   string
	prefix string
	dryRun bool
}

func (s *opSelect) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&s.phases, "state", nil, "select tasks in these phases, as ledger ls --phase lists them, not the stored statuses of ledger ls --status (comma-separated: "+nameList(kvledger.Phases)+")")
	f.StringVar(&s.kind, "kind", "", "select tasks of this kind")
	f.StringVar(&s.prefix, "prefix", "", "select tasks whose key starts with this prefix")
	f.BoolVar(&s.dryRun, "dry-run", false, "print what would change and change nothing")
}

func (s *opSelect) filtered() bool { return len(s.phases) > 0 || s.kind != "" || s.prefix != "" }

// opAction is one operator action: its verb, the phases it applies to,
// and the ledger call that carries it out.
type opAction struct {
	cmd        string // the command, for its errors
	verb, past string
	applies    func(kvledger.Phase) bool
	do         func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) error
	// refused, when set, says without writing why do would refuse key
	// (nil: it would not), for a dry run.
	refused func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey) error
}

// opResult is one task's line of an action's report.
type opResult struct {
	Key    string `json:"key"`
	Phase  string `json:"state"`
	Action string `json:"action"` // the verb done, "would <verb>" in a dry run, or "error"
	Error  string `json:"error,omitempty"`
}

func (a *app) ledgerReopen(lf *ledgerFlags) *cobra.Command {
	var sel opSelect
	act := opAction{cmd: "reopen", verb: "reopen", past: "reopened",
		applies: kvledger.Phase.Reopenable,
		do: func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) error {
			_, err := l.Reopen(ctx, kvledger.Actor(lf.actor), key, now)
			return err
		}}
	cmd := &cobra.Command{
		Use:   "reopen [KEY...] [--state S] [--kind K] [--prefix P] [--dry-run]",
		Short: "Run failed or cancelled tasks again, and unblock their dependents",
		Long: `Reopen returns failed and cancelled tasks to pending with their attempts
reset, and unblocks the tasks they blocked. Name tasks by key, or choose
them with filters; a filter picks only failed and cancelled tasks.`,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runOp(cmd.Context(), lf, &sel, act, args) },
	}
	sel.flags(cmd)
	return cmd
}

func (a *app) ledgerCancel(lf *ledgerFlags) *cobra.Command {
	var (
		sel    opSelect
		reason string
	)
	act := opAction{cmd: "cancel", verb: "cancel", past: "cancelled",
		applies: kvledger.Phase.Cancellable,
		do: func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) error {
			_, err := l.Cancel(ctx, kvledger.Actor(lf.actor), key, reason, now)
			return err
		}}
	cmd := &cobra.Command{
		Use:   "cancel [KEY...] [--state S] [--kind K] [--prefix P] [--reason R] [--dry-run]",
		Short: "Cancel tasks that have not ended (their dependents are blocked)",
		Long: `Cancel ends pending, scheduled, retrying and running tasks as cancelled;
a running task's worker sees its claim end and its handler's context is
cancelled. Their dependents are blocked, as by a failure. Name tasks by
key, or choose them with filters; a filter picks only tasks that have not
ended.`,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runOp(cmd.Context(), lf, &sel, act, args) },
	}
	sel.flags(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", `reason stored as the task's last error (default "cancelled by ACTOR")`)
	return cmd
}

// deleteAction removes ended tasks through Ledger.Delete.
func deleteAction(lf *ledgerFlags, cmd string) opAction {
	return opAction{cmd: cmd, verb: "remove", past: "removed",
		applies: kvledger.Phase.Final,
		do: func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) error {
			return l.Delete(ctx, kvledger.Actor(lf.actor), key, now)
		},
		refused: func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey) error {
			return l.Needed(ctx, key)
		}}
}

func (a *app) ledgerPurge(lf *ledgerFlags) *cobra.Command {
	var (
		sel     opSelect
		all     bool
		confirm string
	)
	cmd := &cobra.Command{
		Use:   "purge [--state S] [--kind K] [--prefix P] [--dry-run] | --all --confirm BUCKET",
		Short: "Remove ended tasks, or with --all every task of the ledger",
		Long: `Purge removes every ended task (completed, failed, cancelled, blocked)
that the filters choose, each with its own event. A task that a pending or
running task still needs is kept: its line names the tasks that need it,
and the command exits 1 (remove it once they have ended, or cancel them).
With --all it empties the ledger: tasks that have not ended are cancelled
first, then every task is removed. --all asks for the bucket's name again
in --confirm.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !all {
				if !sel.filtered() {
					sel.phases = []string{string(kvledger.PhaseCompleted), string(kvledger.PhaseFailed),
						string(kvledger.PhaseCancelled), string(kvledger.PhaseBlocked)}
				}
				return a.runOp(cmd.Context(), lf, &sel, deleteAction(lf, "purge"), nil)
			}
			if sel.filtered() {
				return errors.New("ledger purge --all takes no filter: it removes every task")
			}
			if confirm != lf.bucket {
				return fmt.Errorf("ledger purge --all removes every task of %q: repeat the bucket with --confirm %s", lf.bucket, lf.bucket)
			}
			return a.purgeAll(cmd.Context(), lf, sel.dryRun)
		},
	}
	sel.flags(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "remove every task, cancelling those that have not ended")
	cmd.Flags().StringVar(&confirm, "confirm", "", "the bucket's name, required with --all")
	return cmd
}

// purgeAll cancels every task that has not ended, then removes every task.
func (a *app) purgeAll(parent context.Context, lf *ledgerFlags, dryRun bool) error {
	return a.withLedger(parent, lf, ledgerUpdate, func(ctx context.Context, l *kvledger.Ledger) error {
		snap, err := l.Snapshot(ctx)
		var bad *kvledger.CorruptRecordsError
		if err != nil && !errors.As(err, &bad) {
			return err
		}
		cancel := opAction{cmd: "purge", verb: "cancel", past: "cancelled",
			do: func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) error {
				_, err := l.Cancel(ctx, kvledger.Actor(lf.actor), key, "purged by "+lf.actor, now)
				return err
			}}
		del := deleteAction(lf, "purge")
		// Every cancel first, then every removal: a removal is refused
		// while a task that needs the record has not ended
		// (kvledger.ErrNeeded), and the cancels end them all (so a dry
		// run does not ask).
		del.refused = nil
		out := make([]opResult, 0, len(snap.Tasks))
		for _, t := range snap.Tasks {
			r := opResult{Key: string(t.Key), Phase: string(t.Phase(wall.Now()))}
			if !kvledger.Phase(r.Phase).Final() {
				r = a.apply(ctx, l, cancel, r, dryRun)
			}
			out = append(out, r)
		}
		for i, r := range out {
			if r.Error != "" {
				continue
			}
			after := kvledger.Phase(r.Phase)
			if r.Action != "" {
				after = kvledger.PhaseCancelled
			}
			done := a.apply(ctx, l, del, opResult{Key: r.Key, Phase: string(after)}, dryRun)
			done.Phase = r.Phase
			if r.Action != "" && done.Error == "" {
				done.Action = r.Action + ", " + done.Action
			}
			out[i] = done
		}
		// A value that is not a record stays: say so, and how to remove it.
		return corruptAfter(a.reportOp(out, del, dryRun), lf.bucket, bad)
	})
}

// runOp carries out act on the tasks sel or keys name.
func (a *app) runOp(parent context.Context, lf *ledgerFlags, sel *opSelect, act opAction, keys []string) error {
	if len(keys) > 0 && sel.filtered() {
		return fmt.Errorf("ledger %s takes keys or filters, not both", act.cmd)
	}
	if len(keys) == 0 && !sel.filtered() {
		return fmt.Errorf("ledger %s needs keys or a filter (--state, --kind, --prefix)", act.cmd)
	}
	f := taskFilter{kind: sel.kind, prefix: sel.prefix}
	if err := f.addPhases("state", sel.phases); err != nil {
		return err
	}
	return a.withLedger(parent, lf, ledgerUpdate, func(ctx context.Context, l *kvledger.Ledger) error {
		var out []opResult
		if len(keys) > 0 {
			for _, k := range keys {
				r, err := a.applyKey(ctx, l, lf, act, k, sel.dryRun)
				if err != nil && len(keys) == 1 {
					// One key named: its error is the command's, alone.
					return err
				}
				out = append(out, r)
			}
			return a.reportOp(out, act, sel.dryRun)
		}
		snap, err := l.Snapshot(ctx)
		var bad *kvledger.CorruptRecordsError
		if err != nil && !errors.As(err, &bad) {
			return err
		}
		now := wall.Now()
		for _, t := range snap.Tasks {
			p := t.Phase(now)
			if !act.applies(p) || !f.match(t, p) {
				continue
			}
			out = append(out, a.apply(ctx, l, act, opResult{Key: string(t.Key), Phase: string(p)}, sel.dryRun))
		}
		return a.reportOp(out, act, sel.dryRun)
	})
}

// applyKey carries out act on the task named key and returns its report
// line and, when it failed, its error (a corrupt record's names the
// repair tool).
func (a *app) applyKey(ctx context.Context, l *kvledger.Ledger, lf *ledgerFlags, act opAction, key string, dryRun bool) (opResult, error) {
	r := opResult{Key: key}
	t, found, err := l.State(ctx, kvledger.IdempotencyKey(key))
	switch {
	case errors.Is(err, kvledger.ErrCorruptRecord):
		err = fmt.Errorf("%w; remove it with: natscoord ledger rm --force %s", err, key)
	case err == nil && !found:
		err = errNoTask(lf.bucket, key)
	case err == nil:
		r.Phase = string(t.Phase(wall.Now()))
		if r = a.apply(ctx, l, act, r, dryRun); r.Error != "" {
			err = errors.New(r.Error)
		}
		return r, err
	}
	r.Action, r.Error = "error", err.Error()
	return r, err
}

// apply carries out act on r's task, or in a dry run says it would.
func (a *app) apply(ctx context.Context, l *kvledger.Ledger, act opAction, r opResult, dryRun bool) opResult {
	if dryRun {
		if act.applies != nil && !act.applies(kvledger.Phase(r.Phase)) {
			r.Action, r.Error = "error", fmt.Sprintf("cannot %s a task that is %s", act.verb, r.Phase)
			return r
		}
		if act.refused != nil {
			if err := act.refused(ctx, l, kvledger.IdempotencyKey(r.Key)); err != nil {
				r.Action, r.Error = "error", err.Error()
				return r
			}
		}
		r.Action = "would " + act.verb
		return r
	}
	if err := act.do(ctx, l, kvledger.IdempotencyKey(r.Key), wall.Now()); err != nil {
		r.Action, r.Error = "error", err.Error()
		return r
	}
	r.Action = act.past
	return r
}

// reportOp prints one line per task and a summary; any task that could
// not be changed makes the command fail after the report.
func (a *app) reportOp(out []opResult, act opAction, dryRun bool) error {
	failed := 0
	for _, r := range out {
		if r.Error != "" {
			failed++
		}
	}
	if a.json {
		if out == nil {
			out = []opResult{}
		}
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
	} else {
		rows := make([][]string, 0, len(out))
		for _, r := range out {
			rows = append(rows, []string{r.Key, dash(r.Phase), r.Action, dash(r.Error)})
		}
		if len(rows) > 0 {
			if err := writeTable(a.stdout, []string{"KEY", "STATE", "ACTION", "ERROR"}, rows); err != nil {
				return err
			}
		}
		verb := act.past
		if dryRun {
			verb = "would " + act.verb
		}
		if _, err := fmt.Fprintf(a.stdout, "%s %d task(s), %d error(s)\n", verb, len(out)-failed, failed); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("ledger %s: %d of %d task(s) not changed", act.cmd, failed, len(out))
	}
	return nil
}
