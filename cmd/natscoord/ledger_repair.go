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

// corruptRows are the `ledger ls` table rows of corrupt records, marked.
func corruptRows(bad *kvledger.CorruptRecordsError) [][]string {
	rows := make([][]string, 0, len(bad.Records))
	for _, r := range bad.Records {
		key := string(r.Key)
		if key == "" {
			key = r.BucketKey
		}
		rows = append(rows, []string{key, corruptStatus, "-", "-", "-", "-", "-", strconv.FormatUint(r.Revision, 10)})
	}
	return rows
}

func (a *app) ledgerRm(lf *ledgerFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "rm KEY --force",
		Short: "Remove one stored record whatever it holds (a repair tool: no event, any status)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !force {
				return errors.New("ledger rm removes a record without any ledger check: add --force")
			}
			// The store alone: rm removes a record beneath the ledger
			// (no checks, no event).
			return a.withJS(cmd.Context(), func(ctx context.Context, js jetstream.JetStream) error {
				store, err := openStore(ctx, js, lf.bucket, false)
				if err != nil {
					return err
				}
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
	cmd.Flags().BoolVar(&force, "force", false, "confirm removing the record without any ledger check")
	return cmd
}
