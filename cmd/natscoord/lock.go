package main

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvlock"
)

func init() { extraCommands = append(extraCommands, (*app).lockCommand) }

// lockRow is one held kvlock lock or election lease.
type lockRow struct {
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	Key      string    `json:"key"`
	Holder   string    `json:"holder"`
	TTL      string    `json:"ttl"`
	Acquired time.Time `json:"acquired"`
	Revision uint64    `json:"revision"`
	Lease    string    `json:"lease_key"`
}

func (a *app) lockCommand() *cobra.Command {
	var bucket, name string
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Hold a kvlock lock while a command runs; inspect locks and elections",
	}
	cmd.PersistentFlags().StringVar(&bucket, "bucket", kvlease.DefaultBucket, "lock bucket (kvlock keeps locks in a kvlease bucket)")
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the locks and election leaders held now",
		Long: "ls lists the kvlock locks (\"<name>.l.<key>\") and election leases (\"<name>.e.<election>\")\n" +
			"held in the bucket. Fair-mode queue entries are not listed. Release a stuck lock with\n" +
			"`natscoord lease release <lease_key> --force`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rows []lockRow
			err := a.withBucket(cmd.Context(), bucket, func(ctx context.Context, b *kvx.Bucket) error {
				err := b.Scan(ctx, ">", func(e kvx.Entry) bool {
					if r, ok := decodeLock(e); ok && (name == "" || r.Name == name) {
						rows = append(rows, r)
					}
					return true
				})
				return err
			})
			if err != nil && !defaultBucketMissing(cmd, err) {
				return err
			}
			if a.json {
				if rows == nil {
					rows = []lockRow{}
				}
				return writeJSON(a.stdout, rows)
			}
			out := make([][]string, 0, len(rows))
			for _, r := range rows {
				out = append(out, []string{r.Name, r.Kind, r.Key, r.Holder, r.TTL,
					r.Acquired.Format(time.RFC3339), strconv.FormatUint(r.Revision, 10)})
			}
			return writeTable(a.stdout, []string{"NAME", "KIND", "KEY", "HOLDER", "TTL", "ACQUIRED", "REVISION"}, out)
		},
	}
	ls.Flags().StringVar(&name, "name", "", "only locks of this kvlock Config.Name")
	cmd.AddCommand(ls)
	a.addLockRun(cmd, &bucket)
	return cmd
}

// decodeLock recognizes kvlock's lease keys, a lock or an election,
// through kvlock.ParseKey, which owns the layout.
func decodeLock(e kvx.Entry) (lockRow, bool) {
	k, ok := kvlock.ParseKey(e.Key)
	if !ok || (k.Kind != kvlock.KeyLock && k.Kind != kvlock.KeyElection) {
		return lockRow{}, false
	}
	lease, ok := decodeLease(e)
	if !ok {
		return lockRow{}, false
	}
	return lockRow{Name: k.Name, Key: k.Resource, Kind: string(k.Kind), Holder: lease.Holder, TTL: lease.TTL,
		Acquired: lease.Acquired, Revision: lease.Revision, Lease: e.Key}, true
}
