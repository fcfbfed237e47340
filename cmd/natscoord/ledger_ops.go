package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// An operator action changes tasks named by key or chosen by a filter:
// `ledger reopen`, `ledger cancel`, `ledger rm` and `ledger purge`. Each
// change is the ledger's own operation (Reopen, Cancel, Delete): one
// compare-and-set on the record that leaves an event, so a task that
// moved between the listing and the write is refused, never overwritten.

// opAction is one operator action: its verb, the phases it applies to,
// and the ledger call that carries it out.
type opAction struct {
	cmd        string // the command, for its errors
	verb, past string
	applies    func(kvledger.Phase) bool
	do         func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) error
	// doSays, when set, is do that also says what it did (empty: past),
	// for an action whose effect depends on the task: cancel.
	doSays func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) (string, error)
	// refused, when set, says without writing why do would refuse key
	// (nil: it would not), for a dry run.
	refused func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey) error
}

// opResult is one task's line of an action's report.
type opResult struct {
	Key    string `json:"key"`
	Phase  string `json:"phase"`
	Action string `json:"action"` // the verb done, "would <verb>" in a dry run, or "error"
	Error  string `json:"error,omitempty"`
}

func (a *app) ledgerReopen(lf *ledgerFlags) *cobra.Command {
	var sel opSelect
	act := opAction{cmd: "reopen", verb: "reopen", past: "reopened",
		applies: kvledger.Phase.Reopenable,
		do: func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) error {
			_, err := l.Reopen(ctx, kvledger.Actor(lf.actor), key, now)
			if errors.Is(err, kvledger.ErrNotFailed) {
				// A task waiting for its time is what run-now is for.
				if t, found, serr := l.State(ctx, key); serr == nil && found && t.Phase(now).Delayed() {
					err = fmt.Errorf("%w; to run it now: natscoord ledger run-now %s", err, string(key))
				}
			}
			return err
		}}
	cmd := &cobra.Command{
		Use:   "reopen KEY... | reopen [--phase P] [--kind K] [--prefix P] [--under P] [--schedule S] [--dry-run | --yes]",
		Short: "Run failed or cancelled tasks again, and unblock their dependents",
		Long: `Reopen returns failed and cancelled tasks to pending with their attempts
reset, and unblocks the tasks they blocked. A filter picks only failed and
cancelled tasks.

` + selectHelp,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runOp(cmd.Context(), lf, &sel, act, args) },
	}
	sel.flags(cmd)
	return cmd
}

func (a *app) ledgerRunNow(lf *ledgerFlags) *cobra.Command {
	var sel opSelect
	act := opAction{cmd: "run-now", verb: "run now", past: "made ready",
		applies: kvledger.Phase.Delayed,
		do: func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) error {
			_, err := l.RunNow(ctx, kvledger.Actor(lf.actor), key, now)
			return err
		}}
	cmd := &cobra.Command{
		Use:   "run-now KEY... | run-now [--phase P] [--kind K] [--prefix P] [--under P] [--schedule S] [--dry-run | --yes]",
		Short: "Make scheduled or retrying tasks ready at once",
		Long: `Run-now makes tasks that wait for their time ready at once: scheduled
tasks (admitted with a run-at or delay ahead) and retrying ones (waiting
out a failed attempt's backoff). Their attempts are unchanged, and needs
not completed still hold them. Each task is one compare-and-set on its
record, with the event ledger.run_now; a task already due is left as it is.
A filter picks only scheduled and retrying tasks.

` + selectHelp,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runOp(cmd.Context(), lf, &sel, act, args) },
	}
	sel.flags(cmd)
	return cmd
}

func (a *app) ledgerCancel(lf *ledgerFlags) *cobra.Command {
	var (
		sel    opSelect
		reason string
		wait   time.Duration
	)
	act := opAction{cmd: "cancel", verb: "cancel", past: "cancelled",
		applies: kvledger.Phase.Cancellable,
		doSays: func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) (string, error) {
			return cancelTask(ctx, l, kvledger.Actor(lf.actor), key, reason, now, wait)
		}}
	cmd := &cobra.Command{
		Use:   "cancel KEY... | cancel [--phase P] [--kind K] [--prefix P] [--under P] [--schedule S] [--dry-run | --yes] [--reason R] [--wait D]",
		Short: "Cancel tasks that have not ended (their dependents are blocked)",
		Long: `Cancel ends pending, scheduled and retrying tasks as cancelled at once.
A running task is asked to stop: it shows as cancelling while its worker
cancels the handler's context (natscoord work: SIGTERM to the command,
SIGKILL after --grace), and ends cancelled, never retried, once the
handler has returned, or once its dead worker's claim expired. Until then
it keeps its claim, so no other worker runs it and it cannot be reopened.
With --wait the command waits up to that long for running tasks to end.
Dependents are blocked, as by a failure. A filter picks only tasks that
have not ended.

` + selectHelp,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runOp(cmd.Context(), lf, &sel, act, args) },
	}
	sel.flags(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", `reason stored as the task's last error (default "cancelled by ACTOR")`)
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for running tasks to end cancelled (0: report them cancelling)")
	return cmd
}

// cancelTask cancels key and says what it did: "cancelled", or
// "cancelling" for a running task whose handler has not returned within
// wait (a wait that ends reports it so, no error: the request stands).
func cancelTask(ctx context.Context, l *kvledger.Ledger, actor kvledger.Actor, key kvledger.IdempotencyKey, reason string, now time.Time, wait time.Duration) (string, error) {
	rec, err := l.Cancel(ctx, actor, key, reason, now)
	if err != nil {
		return "", err
	}
	if rec.Status == kvledger.StatusClaimed && wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		final, _ := l.WaitFinal(wctx, key)
		cancel()
		if f, ok := final[key]; ok {
			rec = f
		}
	}
	return string(rec.Phase(wall.Now())), nil
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
		wait    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "purge [--phase P] [--kind K] [--prefix P] [--under P] [--schedule S] [--dry-run | --yes] | purge --all --confirm BUCKET",
		Short: "Remove ended tasks, or with --all every task of the ledger",
		Long: `Purge removes every ended task (completed, failed, cancelled, blocked)
that the filters choose (without a filter: every ended task), each with its
own event. It takes no key, so it changes nothing without --yes: it lists
what it would remove, as --dry-run does, and exits 1. A task that a pending
or running task still needs is kept: its line names the tasks that need
it, and the command exits 1 (remove it once they have ended, or cancel
them). With --all it empties the ledger: tasks that have not ended are
cancelled first, then every task is removed. A running task ends only once
its handler has returned (it is cancelling meanwhile): purge waits up to
--wait for those, and keeps any still running, naming it (the command
exits 1; purge again once it has ended). --all asks for the bucket's name
again in --confirm, instead of --yes.

` + filterHelp,
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
			return a.purgeAll(cmd.Context(), lf, sel.dryRun, wait)
		},
	}
	sel.flags(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "remove every task, cancelling those that have not ended")
	cmd.Flags().StringVar(&confirm, "confirm", "", "the bucket's name, required with --all")
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "with --all, how long to wait for the running tasks it cancels to end")
	return cmd
}

// purgeAll cancels every task that has not ended, then removes every task.
func (a *app) purgeAll(parent context.Context, lf *ledgerFlags, dryRun bool, wait time.Duration) error {
	return a.withLedger(parent, lf, ledgerUpdate, func(ctx context.Context, l *kvledger.Ledger) error {
		snap, err := l.Snapshot(ctx)
		var bad *kvledger.CorruptRecordsError
		if err != nil && !errors.As(err, &bad) {
			return err
		}
		cancel := opAction{cmd: "purge", verb: "cancel", past: "cancelled",
			doSays: func(ctx context.Context, l *kvledger.Ledger, key kvledger.IdempotencyKey, now time.Time) (string, error) {
				return cancelTask(ctx, l, kvledger.Actor(lf.actor), key, "purged by "+lf.actor, now, 0)
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
		// A running task ends once its handler returned: all are waited
		// for at once, up to wait; one still running is then refused
		// by its removal (not final).
		var running []kvledger.IdempotencyKey
		for _, r := range out {
			if r.Action == string(kvledger.PhaseCancelling) {
				running = append(running, kvledger.IdempotencyKey(r.Key))
			}
		}
		if len(running) > 0 && wait > 0 {
			wctx, cancel := context.WithTimeout(ctx, wait)
			_, _ = l.WaitFinal(wctx, running...)
			cancel()
		}
		for i, r := range out {
			if r.Error != "" {
				continue
			}
			after := kvledger.Phase(r.Phase)
			if r.Action != "" {
				after = kvledger.PhaseCancelled // or cancelling: Delete refuses it
			}
			done := a.apply(ctx, l, del, opResult{Key: r.Key, Phase: string(after)}, dryRun)
			done.Phase = r.Phase
			if r.Action != "" && done.Error == "" {
				was := r.Action // "cancelled", "would cancel", or "cancelling" that ended since
				if !dryRun {
					was = string(kvledger.PhaseCancelled) // removed: it ended
				}
				done.Action = was + ", " + done.Action
			}
			out[i] = done
		}
		// A value that is not a record stays: say so, and how to remove it.
		return corruptAfter(a.reportOp(out, del, dryRun), lf.bucket, bad)
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
	r.Action = act.past
	var err error
	if act.doSays != nil {
		var said string
		if said, err = act.doSays(ctx, l, kvledger.IdempotencyKey(r.Key), wall.Now()); said != "" {
			r.Action = said
		}
	} else {
		err = act.do(ctx, l, kvledger.IdempotencyKey(r.Key), wall.Now())
	}
	if err != nil {
		r.Action, r.Error = "error", err.Error()
	}
	return r
}

// reportOp prints one line per task and a summary; any task that could
// not be changed makes the command fail after the report.
func (a *app) reportOp(out []opResult, act opAction, dryRun bool) error {
	failed, other := 0, map[string]int{} // other: tasks done otherwise than act.past (cancelling)
	for _, r := range out {
		switch {
		case r.Error != "":
			failed++
		case !dryRun && act.doSays != nil && r.Action != act.past:
			other[r.Action]++
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
			if err := writeTable(a.stdout, []string{"KEY", "PHASE", "ACTION", "ERROR"}, rows); err != nil {
				return err
			}
		}
		verb := act.past
		if dryRun {
			verb = "would " + act.verb
		}
		done := len(out) - failed
		var also string
		for _, k := range slices.Sorted(maps.Keys(other)) {
			done -= other[k]
			also += fmt.Sprintf(", %d %s", other[k], k)
		}
		if _, err := fmt.Fprintf(a.stdout, "%s %d task(s)%s, %d error(s)\n", verb, done, also, failed); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("ledger %s: %d of %d task(s) not changed", act.cmd, failed, len(out))
	}
	return nil
}
