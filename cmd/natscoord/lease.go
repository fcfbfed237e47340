package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvlock"
)

func init() { extraCommands = append(extraCommands, (*app).leaseCommand) }

// leaseRow is one lease as `lease ls` and `lease show` print it. It shows
// what the bucket stores; no expiry is computed here, because only the
// server judges a lease's expiry.
type leaseRow struct {
	Key       string    `json:"key"`
	Holder    string    `json:"holder"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	TTL       string    `json:"ttl"`
	Acquired  time.Time `json:"acquired"`
	Revision  uint64    `json:"revision"`
	OwnerHash string    `json:"owner_hash"`
	// Corrupt marks a key whose value is not a lease (see corruptRow).
	Corrupt bool `json:"corrupt,omitempty"`
}

func (a *app) leaseCommand() *cobra.Command {
	var bucket string
	cmd := &cobra.Command{
		Use:   "lease",
		Short: "Inspect and force-release kvlease leases",
	}
	cmd.PersistentFlags().StringVar(&bucket, "bucket", kvlease.DefaultBucket, "lease bucket")

	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the leases held now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := a.withBucket(cmd.Context(), bucket, func(ctx context.Context, b *kvx.Bucket) error {
				var rows []leaseRow
				err := b.Scan(ctx, ">", func(e kvx.Entry) bool {
					if r, ok := decodeLease(e); ok {
						rows = append(rows, r)
					} else if r, ok := corruptRow(e); ok {
						rows = append(rows, r)
					}
					return true
				})
				if err != nil {
					return err
				}
				return a.printLeases(rows)
			})
			if defaultBucketMissing(cmd, err) {
				return a.printLeases(nil)
			}
			return err
		},
	}
	show := &cobra.Command{
		Use:   "show KEY",
		Short: "Show who holds one lease (KEY is the bucket key, e.g. jobs.job-7)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withBucket(cmd.Context(), bucket, func(ctx context.Context, b *kvx.Bucket) error {
				r, err := readLease(ctx, b, args[0])
				if err != nil {
					return err
				}
				if a.json {
					return writeJSON(a.stdout, r)
				}
				return writeTable(a.stdout, []string{"FIELD", "VALUE"}, [][]string{
					{"key", r.Key}, {"holder", r.Holder}, {"host", r.Host}, {"pid", strconv.Itoa(r.PID)},
					{"ttl", r.TTL}, {"acquired", r.Acquired.Format(time.RFC3339Nano)},
					{"revision", strconv.FormatUint(r.Revision, 10)}, {"owner hash", r.OwnerHash},
				})
			})
		},
	}
	var force bool
	release := &cobra.Command{
		Use:   "release KEY --force",
		Short: "Delete a lease whoever holds it (the holder learns at its next renewal)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !force {
				return errors.New("lease release deletes another process's lease without asking it: add --force")
			}
			return a.withBucket(cmd.Context(), bucket, func(ctx context.Context, b *kvx.Bucket) error {
				r, err := readLease(ctx, b, args[0])
				if errors.Is(err, errNotALease) {
					// A corrupt value is exactly what a forced release is
					// for: remove it, and say what it was.
					r, err = leaseRow{Key: args[0], Holder: corruptHolder, Corrupt: true}, nil
				}
				if err != nil {
					return err
				}
				m, err := kvlease.NewManager(ctx, b.JetStream(), kvlease.Config{Bucket: bucket, Holder: "natscoord-cli"})
				if err != nil {
					return err
				}
				defer func() { _ = m.Close(context.WithoutCancel(ctx)) }()
				ok, err := m.ForceReleaseKey(ctx, args[0])
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("lease %q: no lease held (it ended meanwhile)", args[0])
				}
				if a.json {
					return writeJSON(a.stdout, map[string]any{"key": args[0], "released": true, "holder": r.Holder, "revision": r.Revision, "corrupt": r.Corrupt})
				}
				if r.Corrupt {
					_, err = fmt.Fprintf(a.stdout, "released %s (it held a corrupt value, not a lease)\n", args[0])
					return err
				}
				_, err = fmt.Fprintf(a.stdout, "released %s (held by %s at revision %d)\n", args[0], r.Holder, r.Revision)
				return err
			})
		},
	}
	release.Flags().BoolVar(&force, "force", false, "confirm deleting a lease held by another process")
	cmd.AddCommand(ls, show, release)
	return cmd
}

func (a *app) printLeases(rows []leaseRow) error {
	if a.json {
		if rows == nil {
			rows = []leaseRow{}
		}
		return writeJSON(a.stdout, rows)
	}
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		if r.Corrupt {
			out = append(out, []string{r.Key, r.Holder, "-", "-", "-", "-", strconv.FormatUint(r.Revision, 10)})
			continue
		}
		out = append(out, []string{r.Key, r.Holder, r.Host, strconv.Itoa(r.PID), r.TTL,
			r.Acquired.Format(time.RFC3339), strconv.FormatUint(r.Revision, 10)})
	}
	return writeTable(a.stdout, []string{"KEY", "HOLDER", "HOST", "PID", "TTL", "ACQUIRED", "REVISION"}, out)
}

// withBucket connects and binds an existing bucket (never creating one: an
// inspection must not write), bounded by --timeout.
func (a *app) withBucket(parent context.Context, bucket string, fn func(context.Context, *kvx.Bucket) error) error {
	return a.withJS(parent, func(ctx context.Context, js jetstream.JetStream) error {
		b, err := bindExisting(ctx, js, bucket)
		if err != nil {
			return err
		}
		defer b.Close()
		return fn(ctx, b)
	})
}

func bindExisting(ctx context.Context, js jetstream.JetStream, bucket string) (*kvx.Bucket, error) {
	b, err := kvx.Bind(ctx, js, bucket, false)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, noBucketError{bucket}
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %q: %w", bucket, err)
	}
	return b, nil
}

// readLease reads one lease key from the stream leader.
func readLease(ctx context.Context, b *kvx.Bucket, key string) (leaseRow, error) {
	if !kvx.ValidKey(key) {
		return leaseRow{}, fmt.Errorf("lease %q: not a valid key", key)
	}
	e, err := b.Get(ctx, key)
	if errors.Is(err, kvx.ErrNotFound) {
		return leaseRow{}, fmt.Errorf("lease %q: no lease held", key)
	}
	if err != nil {
		return leaseRow{}, err
	}
	r, ok := decodeLease(e)
	if !ok {
		return leaseRow{}, fmt.Errorf("lease %q: %w", key, errNotALease)
	}
	return r, nil
}

// errNotALease: the key holds a value that is not a lease.
var errNotALease = errors.New("the key holds data, not a lease (remove a corrupt one with lease release --force)")

// corruptHolder is what `lease ls` shows as the holder of a key whose
// value is not a lease.
const corruptHolder = "!corrupt"

// corruptRow is the `lease ls` row of a key whose value is not a lease,
// so that a corrupt lease is seen (and can be force-released) instead of
// hidden. kvlock's own data keys (queue tickets, election values:
// kvlock.IsDataKey) are not leases and are left out.
func corruptRow(e kvx.Entry) (leaseRow, bool) {
	if kvlock.IsDataKey(e.Key) {
		return leaseRow{}, false
	}
	return leaseRow{Key: e.Key, Holder: corruptHolder, Host: "-", TTL: "-", Revision: e.Revision, Corrupt: true}, true
}

// decodeLease reads a lease value through kvlease, which owns the
// format; data keys written through a Proof and anything else that is not
// a lease report false.
func decodeLease(e kvx.Entry) (leaseRow, bool) {
	h, err := kvlease.DecodeHolder(e.Value)
	if err != nil {
		return leaseRow{}, false
	}
	return leaseRow{Key: e.Key, Holder: h.ID, Host: h.Host, PID: h.PID, TTL: h.TTL().String(),
		Acquired: h.Acquired, Revision: e.Revision, OwnerHash: h.OwnerHash}, true
}
