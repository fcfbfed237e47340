package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// `ledger pause|resume KIND`: a paused kind is a record in the ledger
// bucket (kvledger.Pause) that every worker of the ledger obeys as its
// watch delivers it; these commands write and delete it.

const pauseHelp = `pause stops every worker of the ledger (natscoord work, Go workers) from
starting tasks of KIND: its ready tasks wait, in their order, claimed by
nobody and using no attempt, until natscoord ledger resume KIND. Tasks of the
kind already running finish. Tasks are still admitted, and schedules of the
kind keep admitting their periods (their tasks wait too) unless --schedules
is given: then no period is admitted while the kind is paused, and the
periods that pass are skipped. Workers obey as soon as their watch delivers
the pause; ledger stats and the dashboard list the paused kinds.`

func (a *app) ledgerPause(lf *ledgerFlags) *cobra.Command {
	var schedules bool
	cmd := &cobra.Command{
		Use:   "pause KIND [--schedules]",
		Short: "Pause a task kind: workers start none of its tasks until resume",
		Long:  pauseHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withScheduleStore(cmd.Context(), lf, ledgerUpdate, func(ctx context.Context, s *kvledger.KVStore) error {
				p, err := s.PauseKind(ctx, kvledger.Pause{Kind: args[0], Schedules: schedules, Actor: kvledger.Actor(lf.actor), At: wall.Now()})
				if err != nil {
					return err
				}
				if a.json {
					return writeJSON(a.stdout, pauseJSON(p))
				}
				what := "its schedules keep admitting"
				if p.Schedules {
					what = "its schedules paused too"
				}
				_, err = fmt.Fprintf(a.stdout, "kind %s paused (%s)\n", escapeCell(p.Kind), what)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&schedules, "schedules", false, "admit no period of the kind's schedules while it is paused (default: they keep admitting)")
	return cmd
}

func (a *app) ledgerResume(lf *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "resume KIND",
		Short: "Resume a paused task kind: workers start its ready tasks at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withScheduleStore(cmd.Context(), lf, ledgerUpdate, func(ctx context.Context, s *kvledger.KVStore) error {
				if err := s.ResumeKind(ctx, args[0], 0); err != nil {
					return err
				}
				if a.json {
					return writeJSON(a.stdout, map[string]any{"resumed": args[0]})
				}
				_, err := fmt.Fprintf(a.stdout, "kind %s resumed\n", escapeCell(args[0]))
				return err
			})
		},
	}
}

type pausedKind struct {
	Kind      string         `json:"kind"`
	Schedules bool           `json:"schedules,omitempty"`
	Actor     kvledger.Actor `json:"actor,omitempty"`
	At        time.Time      `json:"at,omitzero"`
	Revision  uint64         `json:"revision"`
}

func pauseJSON(p kvledger.Pause) pausedKind {
	return pausedKind{Kind: p.Kind, Schedules: p.Schedules, Actor: p.Actor, At: p.At, Revision: p.Rev}
}

// pausedKinds reads the paused kinds of the ledger l opened, for `ledger
// stats`; a stored value that is not a pause is listed by the error.
func pausedKinds(ctx context.Context, l *kvledger.Ledger) ([]pausedKind, error) {
	s, ok := l.Store().(*kvledger.KVStore)
	if !ok {
		return nil, nil
	}
	ps, err := s.Pauses(ctx)
	if err != nil && !errors.Is(err, kvledger.ErrCorruptRecord) {
		return nil, err
	}
	out := make([]pausedKind, len(ps))
	for i, p := range ps {
		out[i] = pauseJSON(p)
	}
	return out, err
}

// pausedLine is the line `ledger stats` prints under its table.
func pausedLine(ps []pausedKind) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = escapeCell(p.Kind)
		if p.Schedules {
			names[i] += " (with its schedules)"
		}
	}
	return "paused: " + strings.Join(names, ", ")
}
