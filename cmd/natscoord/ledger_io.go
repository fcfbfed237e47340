package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

func (a *app) ledgerSnapshot(lf *ledgerFlags) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "snapshot [-o FILE]",
		Short: "Write every task of the ledger as JSON (to stdout or FILE)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// With corrupt records, the valid ones are still written and the
			// command then fails naming the others: the snapshot is
			// incomplete, and a script must not take it for a full one.
			return a.withSnapshot(cmd.Context(), lf, func(snap kvledger.Snapshot, bad *kvledger.CorruptRecordsError) error {
				data, err := kvledger.Encode(snap)
				if err != nil {
					return err
				}
				if file == "" || file == "-" {
					_, err = fmt.Fprintln(a.stdout, string(data))
				} else if err = writeFileAtomic(file, append(data, '\n')); err == nil {
					if a.json {
						err = writeJSON(a.stdout, map[string]any{"file": file, "tasks": len(snap.Tasks)})
					} else {
						_, err = fmt.Fprintf(a.stdout, "wrote %d tasks to %s\n", len(snap.Tasks), file)
					}
				}
				return corruptAfter(err, lf.bucket, bad)
			})
		},
	}
	cmd.Flags().StringVarP(&file, "output", "o", "", "write to FILE instead of stdout (replaced atomically)")
	return cmd
}

func (a *app) ledgerRestore(lf *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "restore FILE",
		Short: "Insert every task of a snapshot file; writes nothing unless all are valid and new",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			snap, err := kvledger.Decode(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			// One connection: the look for the bucket, the restore and, when
			// it fails, the removal of the bucket it created.
			return a.withJS(cmd.Context(), func(ctx context.Context, js jetstream.JetStream) error {
				created, err := bucketMissing(ctx, js, lf.bucket)
				if err != nil {
					return err
				}
				err = useLedger(ctx, js, lf.bucket, ledgerCreate, func(ctx context.Context, l *kvledger.Ledger) error {
					// Check all keys first, so that a conflicting file is
					// refused naming its first existing key before anything
					// is written.
					for _, t := range snap.Tasks {
						_, found, err := l.State(ctx, t.Key)
						if err != nil {
							return err
						}
						if found {
							return fmt.Errorf("ledger %q: task %q already exists; nothing restored", lf.bucket, t.Key)
						}
					}
					if err := l.Restore(ctx, snap); err != nil {
						return err
					}
					if a.json {
						return writeJSON(a.stdout, map[string]any{"bucket": lf.bucket, "restored": len(snap.Tasks)})
					}
					_, err := fmt.Fprintf(a.stdout, "restored %d tasks into %s\n", len(snap.Tasks), lf.bucket)
					return err
				})
				if err != nil && created {
					// A failed restore leaves nothing behind, not even the
					// bucket it created; the removal has its own --timeout,
					// since the restore's may have run out.
					dctx, cancel := a.conn.opContext(context.WithoutCancel(cmd.Context()))
					defer cancel()
					if derr := js.DeleteKeyValue(dctx, lf.bucket); derr != nil {
						return fmt.Errorf("%w (and removing the bucket it created: %v)", err, derr)
					}
					return fmt.Errorf("%w; bucket %q removed", err, lf.bucket)
				}
				return err
			})
		},
	}
}

// bucketMissing reports whether bucket does not exist yet.
func bucketMissing(ctx context.Context, js jetstream.JetStream, bucket string) (bool, error) {
	_, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return true, nil
	}
	return false, err
}

// writeFileAtomic writes data to a temporary file next to path and renames
// it over path, so a failure leaves no partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
	}
	return err
}
