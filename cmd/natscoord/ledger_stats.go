package main

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

func (a *app) ledgerStats(lf *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Count the ledger's tasks by state and kind",
		Long: `stats reads the ledger once and counts its tasks by state (pending,
scheduled, retrying, running, cancelling, completed, failed, cancelled, blocked) and
kind. A long-running process keeps the same counts current from its watch
without reading the ledger again (tasks.Client.Counts).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withSnapshot(cmd.Context(), lf, func(snap kvledger.Snapshot, bad *kvledger.CorruptRecordsError) error {
				t := kvledger.NewTally()
				now := wall.Now()
				for _, rec := range snap.Tasks {
					t.Apply(kvledger.Change{Key: rec.Key, Record: rec, Rev: rec.Rev}, now)
				}
				c := t.Counts(now)
				if a.json {
					return corruptAfter(writeJSON(a.stdout, c), lf.bucket, bad)
				}
				header := []string{"KIND"}
				for _, p := range kvledger.Phases {
					header = append(header, string(p))
				}
				header = append(header, "total")
				kinds := make([]string, 0, len(c.ByKind))
				for k := range c.ByKind {
					kinds = append(kinds, k)
				}
				slices.Sort(kinds)
				row := func(name string, m map[kvledger.Phase]int) []string {
					r, total := []string{name}, 0
					for _, p := range kvledger.Phases {
						r = append(r, strconv.Itoa(m[p]))
						total += m[p]
					}
					return append(r, strconv.Itoa(total))
				}
				rows := make([][]string, 0, len(kinds)+1)
				for _, k := range kinds {
					rows = append(rows, row(kindName(k), c.ByKind[k]))
				}
				rows = append(rows, row("(all)", c.ByPhase))
				if err := writeTable(a.stdout, header, rows); err != nil {
					return err
				}
				if bad != nil {
					_, err := fmt.Fprintf(a.stdout, "%d stored value(s) are not records (see ledger ls)\n", len(bad.Records))
					return err
				}
				return nil
			})
		},
	}
}

// kindName names the kind of tasks admitted without one.
func kindName(kind string) string {
	if kind == "" {
		return "(none)"
	}
	return kind
}
