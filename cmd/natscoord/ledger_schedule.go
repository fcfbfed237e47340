package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// `ledger schedule add|ls|rm`: periodic tasks stored in the ledger bucket
// (kvledger.Schedule). Workers of the ledger run them (worker: stored
// schedules); these commands only declare, list and remove them, each
// write a compare-and-set on the schedule's revision.

const scheduleHelp = `A schedule admits one task per period of its spec into the ledger. Every
worker of the ledger that handles the schedule's kind (natscoord work --kind,
a Go worker) runs it, and the period's task is admitted once under the key
schedule/NAME/PERIOD-START however many workers run it. Adding, replacing or
removing a schedule takes effect on running workers at once. List a
schedule's tasks with natscoord ledger ls --schedule NAME (--prefix
schedule/NAME also lists those of a schedule named NAMEly).

Specs:
  @every DURATION      e.g. @every 30s, @every 1h (at least 1s; periods aligned
                       to the Unix epoch)
  @hourly @daily @weekly @monthly @yearly
  M H DOM MON DOW      five-field cron: minute hour day-of-month month
                       day-of-week, with *, lists, ranges and steps
                       (*/15 9-17 * * 1-5), in --tz (default UTC)

A spec that does not parse, or that no date matches (0 0 31 2 *), is refused.

A cron pattern names wall times in --tz. One that a change of offset skips
(02:30 the night clocks go forward) fires once when the gap ends (03:00), as
cron does, so a daily job runs every day; one that a change repeats (02:30
the night they go back) fires once, at its first occurrence.

Missed periods run once: after a pause of the workers, or while the server
was unavailable, the schedule admits only the latest period that started,
not one task per missed period. No worker running means no task admitted.`

func (a *app) ledgerSchedule(lf *ledgerFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Declare, list and remove periodic tasks (cron or @every) that workers run",
		Long:  scheduleHelp,
	}
	cmd.AddCommand(a.scheduleAdd(lf), a.scheduleLs(lf), a.scheduleRm(lf))
	return cmd
}

func (a *app) scheduleAdd(lf *ledgerFlags) *cobra.Command {
	var (
		spec, zone, task, needs string
		rt                      admitRuntime
		replace, create         bool
	)
	cmd := &cobra.Command{
		Use:   "add NAME --spec SPEC --kind K [--task JSON|@FILE|-] [--tz ZONE] [--replace]",
		Short: "Store a schedule: one task of --kind per period of --spec",
		Long: scheduleHelp + `

add refuses a name that already has a schedule unless --replace, which
replaces it by a compare-and-set on the revision it read.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if rt.runAt != "" {
				return errors.New("ledger schedule add: --run-at does not apply to a schedule (use --delay)")
			}
			if rt.kind == "" {
				return errors.New("ledger schedule add: --kind is required: the workers with a handler for it run the schedule")
			}
			ns, err := parseNeeds("", needs)
			if err != nil {
				return err
			}
			sub, err := rt.submission("", 0, nil, ns)
			if err != nil {
				return err
			}
			sc := kvledger.Schedule{Name: args[0], Spec: spec, TimeZone: zone, Actor: kvledger.Actor(lf.actor),
				Task: kvledger.ScheduleTask{Kind: sub.Kind, Needs: sub.Needs, MaxAttempts: sub.MaxAttempts,
					Priority: sub.Priority, Group: sub.Group, Delay: sub.Delay, Timeout: sub.Timeout}}
			if task != "" {
				v, err := readTaskArg(a.stdin, task)
				if err != nil {
					return err
				}
				if v != nil {
					// readTaskArg keeps numbers as json.Number: their digits
					// are stored as given.
					if sc.Task.Task, err = json.Marshal(v); err != nil {
						return fmt.Errorf("--task: %w", err)
					}
				}
			}
			// Checked before connecting: a bad spec or zone is the
			// command's error, with nothing written.
			if err := sc.Validate(); err != nil {
				return err
			}
			access := ledgerCreate
			if cmd.Flags().Changed("bucket") && !create {
				access = ledgerUpdate
			}
			err = a.withScheduleStore(cmd.Context(), lf, access, func(ctx context.Context, s *kvledger.KVStore) error {
				stored, err := s.PutSchedule(ctx, sc, replace)
				if errors.Is(err, kvledger.ErrScheduleExists) {
					return fmt.Errorf("%w (add --replace to replace it)", err)
				}
				if err != nil {
					return err
				}
				if a.json {
					return writeJSON(a.stdout, scheduleJSONOf(stored, wall.Now()))
				}
				_, err = fmt.Fprintf(a.stdout, "schedule %s stored: %s, kind %s, revision %d, next period %s\n",
					escapeCell(stored.Name), escapeCell(stored.Spec), escapeCell(stored.Task.Kind), stored.Rev,
					stored.Next(wall.Now()).UTC().Format(time.RFC3339))
				return err
			})
			if nb := (noBucketError{}); errors.As(err, &nb) {
				return fmt.Errorf("%w (add --create to create it)", err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec, "spec", "", "when: @every DURATION, @hourly/@daily/@weekly/@monthly/@yearly, or a five-field cron pattern")
	f.StringVar(&zone, "tz", "", "IANA time zone of a cron pattern (e.g. Europe/Paris; default UTC)")
	f.StringVar(&task, "task", "", "each period's task payload: JSON, @FILE or - (stdin)")
	f.StringVar(&needs, "needs", "", "comma-separated keys each period's task needs")
	f.BoolVar(&replace, "replace", false, "replace the schedule of that name if there is one")
	f.BoolVar(&create, "create", false, "create the --bucket ledger when it does not exist")
	rt.register(cmd)
	_ = cmd.MarkFlagRequired("spec")
	_ = f.MarkHidden("run-at") // a period's run-at is its admission plus --delay
	return cmd
}

// scheduleJSON is one schedule in --json output.
type scheduleJSON struct {
	Name        string                    `json:"name"`
	Spec        string                    `json:"spec"`
	TimeZone    string                    `json:"tz,omitempty"`
	Kind        string                    `json:"kind"`
	Task        json.RawMessage           `json:"task,omitempty"`
	Needs       []kvledger.IdempotencyKey `json:"needs,omitempty"`
	MaxAttempts int                       `json:"max_attempts,omitempty"`
	Priority    int                       `json:"priority,omitempty"`
	Group       string                    `json:"group,omitempty"`
	Delay       string                    `json:"delay,omitempty"`
	Next        time.Time                 `json:"next"`
	Revision    uint64                    `json:"revision"`
	Actor       kvledger.Actor            `json:"actor,omitempty"`
	UpdatedAt   time.Time                 `json:"updated_at,omitzero"`
}

func scheduleJSONOf(s kvledger.Schedule, now time.Time) scheduleJSON {
	j := scheduleJSON{Name: s.Name, Spec: s.Spec, TimeZone: s.TimeZone, Kind: s.Task.Kind, Task: s.Task.Task,
		Needs: s.Task.Needs, MaxAttempts: s.Task.MaxAttempts, Priority: s.Task.Priority, Group: s.Task.Group,
		Next: s.Next(now).UTC(), Revision: s.Rev, Actor: s.Actor, UpdatedAt: s.UpdatedAt}
	if s.Task.Delay != 0 {
		j.Delay = s.Task.Delay.String()
	}
	return j
}

func (a *app) scheduleLs(lf *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the stored schedules with their next period",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withScheduleStore(cmd.Context(), lf, ledgerInspect, func(ctx context.Context, s *kvledger.KVStore) error {
				list, err := s.Schedules(ctx)
				if err != nil && !errors.Is(err, kvledger.ErrCorruptRecord) {
					return err
				}
				now := wall.Now()
				if a.json {
					out := make([]scheduleJSON, 0, len(list))
					for _, sc := range list {
						out = append(out, scheduleJSONOf(sc, now))
					}
					if werr := writeJSON(a.stdout, out); werr != nil {
						return werr
					}
				} else {
					rows := make([][]string, 0, len(list))
					for _, sc := range list {
						tz := sc.TimeZone
						if tz == "" {
							tz = "UTC"
						}
						task := "-"
						if len(sc.Task.Task) > 0 {
							task = truncateCell(escapeCell(string(sc.Task.Task)), maxCellWidth)
						}
						rows = append(rows, []string{sc.Name, sc.Spec, tz, sc.Task.Kind,
							sc.Next(now).UTC().Format(time.RFC3339), strconv.FormatUint(sc.Rev, 10), task})
					}
					if len(rows) == 0 {
						if _, werr := fmt.Fprintln(a.stdout, "no schedules"); werr != nil {
							return werr
						}
					} else if werr := writeTable(a.stdout, []string{"NAME", "SPEC", "TZ", "KIND", "NEXT", "REV", "TASK"}, rows); werr != nil {
						return werr
					}
				}
				// A value that is not a schedule: the others are listed, and
				// the command fails naming it.
				return err
			})
		},
	}
}

func (a *app) scheduleRm(lf *ledgerFlags) *cobra.Command {
	var rev uint64
	cmd := &cobra.Command{
		Use:   "rm NAME [--rev N]",
		Short: "Remove a schedule: workers stop admitting its periods (its tasks stay)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return a.withScheduleStore(cmd.Context(), lf, ledgerUpdate, func(ctx context.Context, s *kvledger.KVStore) error {
				var err error
				at := rev
				if rev == 0 {
					at, err = s.RemoveSchedule(ctx, name)
				} else {
					err = s.DeleteSchedule(ctx, name, rev)
				}
				if errors.Is(err, kvledger.ErrCorruptRecord) {
					// Not a schedule: it is removed only at the revision
					// the error names (DeleteSchedule).
					return fmt.Errorf("%w (remove it with --rev and the revision shown)", err)
				}
				if err != nil {
					return err
				}
				if a.json {
					return writeJSON(a.stdout, map[string]any{"removed": name, "revision": at})
				}
				_, err = fmt.Fprintf(a.stdout, "schedule %s removed\n", escapeCell(name))
				return err
			})
		},
	}
	cmd.Flags().Uint64Var(&rev, "rev", 0, "remove only if the schedule is still at this revision (default: the one read)")
	return cmd
}

// withScheduleStore connects and opens the ledger's store for access
// (ledgerInspect and ledgerUpdate refuse a missing bucket), and runs fn.
// Schedules are written to the store directly: their writes publish no
// task event.
func (a *app) withScheduleStore(parent context.Context, lf *ledgerFlags, access ledgerAccess, fn func(context.Context, *kvledger.KVStore) error) error {
	return a.withJS(parent, func(ctx context.Context, js jetstream.JetStream) error {
		s, err := openStore(ctx, js, lf.bucket, access == ledgerCreate)
		if err != nil {
			return err
		}
		defer s.Close() // after fn's writes
		return fn(ctx, s)
	})
}
