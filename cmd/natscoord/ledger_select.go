package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// An operator action picks its tasks by key or by filter, never both.
// Named keys are what the operator asked for: acted on at once. A filter
// (or a command that takes no key, such as purge) may pick more than the
// operator meant, so a change it picks is made only with --yes: without
// it the command prints what it would do, as --dry-run does, and exits 1
// saying to add --yes. It never prompts: a script or CI job has no one
// to answer. Every command that changes tasks picked by a filter goes
// through runOp, or through confirmBulk with a plan of its own.

// selectHelp ends the help of every command that takes keys or filters.
const selectHelp = `Name tasks by key, or pick them with filters, never both. Tasks named by
key are changed at once. Tasks the filters pick are changed only with
--yes: without it the command lists them, as --dry-run does, changes
nothing and exits 1 (it never prompts).

` + filterHelp

// opSelect is how an action picks its tasks: keys, or the filters, and
// whether to only show (--dry-run) or to act on what a filter picks
// (--yes).
type opSelect struct {
	filterFlags
	dryRun, yes bool
}

func (s *opSelect) flags(cmd *cobra.Command) {
	s.register(cmd, "select")
	f := cmd.Flags()
	f.BoolVar(&s.dryRun, "dry-run", false, "print what would change and change nothing")
	f.BoolVar(&s.yes, "yes", false, "change the tasks the filters pick (without it, print them and change nothing); keys named need no --yes")
}

func (s *opSelect) filtered() bool { return s.given() }

// runOp carries out act on the tasks sel or keys name.
func (a *app) runOp(parent context.Context, lf *ledgerFlags, sel *opSelect, act opAction, keys []string) error {
	if len(keys) > 0 && sel.filtered() {
		return fmt.Errorf("ledger %s takes keys or filters, not both", act.cmd)
	}
	if len(keys) == 0 && !sel.filtered() {
		return fmt.Errorf("ledger %s needs keys or a filter (--phase, --kind, --prefix, --under, --schedule)", act.cmd)
	}
	f, err := sel.filter(a.stderr, "ledger "+act.cmd)
	if err != nil {
		return err
	}
	return a.withLedger(parent, lf, ledgerUpdate, func(ctx context.Context, l *kvledger.Ledger) error {
		if len(keys) > 0 {
			var out []opResult
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
		picked, err := pickTasks(ctx, l, f, act.applies)
		if err != nil {
			return err
		}
		return a.confirmBulk(ctx, l, sel, act, picked)
	})
}

// pickTasks returns a report line, key and phase, for each task of l
// that f picks and whose phase applies (nil: any), in the store's order.
// Stored values that are not records are skipped.
func pickTasks(ctx context.Context, l *kvledger.Ledger, f taskFilter, applies func(kvledger.Phase) bool) ([]opResult, error) {
	snap, err := l.Snapshot(ctx)
	var bad *kvledger.CorruptRecordsError
	if err != nil && !errors.As(err, &bad) {
		return nil, err
	}
	now := wall.Now()
	var picked []opResult
	for _, t := range snap.Tasks {
		p := t.Phase(now)
		if (applies == nil || applies(p)) && f.match(t, p) {
			picked = append(picked, opResult{Key: string(t.Key), Phase: string(p)})
		}
	}
	return picked, nil
}

// confirmBulk carries out act on picked, the tasks a filter chose. With
// --dry-run it shows what it would do. Without --yes it shows the same
// and changes nothing: the command fails saying to add --yes, unless
// --yes would change nothing either (nothing picked, or every task
// refused: the dry run's report is the answer).
func (a *app) confirmBulk(ctx context.Context, l *kvledger.Ledger, sel *opSelect, act opAction, picked []opResult) error {
	ask := !sel.yes && !sel.dryRun && len(picked) > 0
	dry := sel.dryRun || ask
	out := make([]opResult, 0, len(picked))
	would := 0
	for _, r := range picked {
		r = a.apply(ctx, l, act, r, dry)
		if r.Error == "" {
			would++
		}
		out = append(out, r)
	}
	err := a.reportOp(out, act, dry)
	if ask && would > 0 {
		return fmt.Errorf("ledger %s: nothing changed: add --yes to %s the %d task(s) listed as %q (--dry-run only lists them)",
			act.cmd, act.verb, would, "would "+act.verb)
	}
	return err
}
