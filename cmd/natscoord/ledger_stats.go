package main

import (
	"context"
	"errors"
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
kind, and lists the paused kinds (natscoord ledger pause). A long-running process keeps the same counts current from its watch
without reading the ledger again (tasks.Client.Counts).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withLedger(cmd.Context(), lf, ledgerInspect, func(ctx context.Context, l *kvledger.Ledger) error {
				snap, err := l.Snapshot(ctx)
				var bad *kvledger.CorruptRecordsError
				if err != nil && !errors.As(err, &bad) {
					return err
				}
				paused, perr := pausedKinds(ctx, l)
				if perr != nil && !errors.Is(perr, kvledger.ErrCorruptRecord) {
					return perr
				}
				t := kvledger.NewTally()
				now := wall.Now()
				for _, rec := range snap.Tasks {
					t.Apply(kvledger.Change{Key: rec.Key, Record: rec, Rev: rec.Rev}, now)
				}
				c := t.Counts(now)
				if a.json {
					out := struct {
						kvledger.Counts
						Paused []pausedKind `json:"paused"`
					}{c, paused}
					return corruptAfter(errors.Join(writeJSON(a.stdout, out), perr), lf.bucket, bad)
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
				if len(paused) > 0 {
					if _, err := fmt.Fprintln(a.stdout, pausedLine(paused)); err != nil {
						return err
					}
				}
				if perr != nil {
					return perr
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
