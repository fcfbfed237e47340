package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// corruptStatus is what `ledger ls` shows as the status of a stored value
// that is not a valid record.
const corruptStatus = "!corrupt"

// withSnapshot reads every task of the existing ledger and runs fn with
// them. A stored value that is not a record does not fail the read: the
// snapshot holds every valid record and bad names the others.
func (a *app) withSnapshot(parent context.Context, lf *ledgerFlags, fn func(snap kvledger.Snapshot, bad *kvledger.CorruptRecordsError) error) error {
	return a.withLedger(parent, lf, ledgerInspect, func(ctx context.Context, l *kvledger.Ledger) error {
		snap, err := l.Snapshot(ctx)
		var bad *kvledger.CorruptRecordsError
		if err != nil && !errors.As(err, &bad) {
			return err
		}
		return fn(snap, bad)
	})
}

// corruptAfter is err; when err is nil and bad names corrupt records, it
// is the one-line error naming them and the way to remove them.
func corruptAfter(err error, bucket string, bad *kvledger.CorruptRecordsError) error {
	if err != nil || bad == nil {
		return err
	}
	return fmt.Errorf("ledger %q: %w; remove one with: natscoord ledger rm --force KEY", bucket, bad)
}

// corruptRows are the `ledger ls` table rows of corrupt records, marked
// in the PHASE column; with wide, their revision in REV.
func corruptRows(bad *kvledger.CorruptRecordsError, wide bool) [][]string {
	rows := make([][]string, 0, len(bad.Records))
	for _, r := range bad.Records {
		row := []string{corruptKey(r), "-", corruptStatus, "-", "-", "-", "-", "-"}
		if wide {
			row = []string{corruptKey(r), "-", corruptStatus, "-", "-", "-", "-", "-", "-", strconv.FormatUint(r.Revision, 10), "-"}
		}
		rows = append(rows, row)
	}
	return rows
}

// corruptKey is the key `ledger ls` lists a corrupt record under: its
// task key, or its bucket key when that does not decode.
func corruptKey(r kvledger.CorruptRecord) string {
	if r.Key != "" {
		return string(r.Key)
	}
	return r.BucketKey
}

func (a *app) ledgerRm(lf *ledgerFlags) *cobra.Command {
	var (
		sel   opSelect
		force bool
	)
	cmd := &cobra.Command{
		Use:   "rm KEY... | rm [--phase P] [--kind K] [--prefix P] [--under P] [--schedule S] [--dry-run | --yes] | rm KEY --force",
		Short: "Remove ended tasks (each with an event); --force removes one record whatever it holds",
		Long: `rm removes completed, failed, cancelled and blocked tasks, named by key or
chosen with filters, each by a compare-and-set that leaves an event; the
key can then be admitted again. A task that has not ended is refused
(cancel it first), and so is a task that a pending or running task still
needs: the error names those tasks (remove it once they have ended, or
cancel them). rm KEY --force is the repair tool: it removes one stored
value whatever it holds, a corrupt one included, with no check, not even
of the tasks that need it (they then wait for a need that has no record,
until it is admitted again); its delete marker is still a ledger.deleted
event, as every removal's is.

` + selectHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !force {
				return a.runOp(cmd.Context(), lf, &sel, deleteAction(lf, "rm"), args)
			}
			if len(args) != 1 || sel.filtered() {
				return errors.New("ledger rm --force removes exactly one key, named, without filters")
			}
			// The store alone: rm --force removes a record beneath the
			// ledger (no checks; the store's delete marker is its
			// ledger.deleted event).
			return a.withJS(cmd.Context(), func(ctx context.Context, js jetstream.JetStream) error {
				store, err := openStore(ctx, js, lf.bucket, false)
				if err != nil {
					return err
				}
				defer store.Close()
				removed, err := store.ForceDelete(ctx, kvledger.IdempotencyKey(args[0]))
				if err != nil {
					return err
				}
				if !removed {
					return errNoTask(lf.bucket, args[0])
				}
				if a.json {
					return writeJSON(a.stdout, map[string]any{"bucket": lf.bucket, "key": args[0], "removed": true})
				}
				_, err = fmt.Fprintf(a.stdout, "removed %s from %s\n", args[0], lf.bucket)
				return err
			})
		},
	}
	sel.flags(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "remove one record without any ledger check, not even of the tasks that need it (repair; it still leaves a ledger.deleted event)")
	return cmd
}
