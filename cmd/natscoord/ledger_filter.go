package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// taskFilter is how `ledger ls` and the operator actions pick tasks from
// the ledger: by phase (kvledger's TaskState.Phase, so "running" and its
// stored name "claimed" both pick claimed records), kind, and key: a raw
// prefix, a key-boundary path (under) or a schedule's periods. The
// deprecated `ls --status` still picks by stored status. The zero filter
// picks every task.
type taskFilter struct {
	statuses map[kvledger.Status]bool
	phases   map[kvledger.Phase]bool
	kind     string
	// prefix is a raw string prefix: "etl" picks etl2/x too.
	prefix string
	// under is a key path without its trailing "/": it picks the key
	// itself and the keys that continue it with "/" (underKey).
	under string
	// schedule picks the period tasks of the schedule of that name
	// (worker.ParsePeriodKey), not those of a schedule whose name only
	// starts with it.
	schedule string
}

// filterHelp says what the key filters match, for the help of every
// command that takes them.
const filterHelp = `--prefix P picks the keys that start with the string P, whatever follows:
--prefix etl picks etl/a and etl2/a. --under P picks the key P and the keys
that start with P followed by "/" (a "/" that ends P is dropped first):
--under etl and --under etl/ both pick etl, etl/a and etl/b/c, not etl2/a.
--schedule NAME picks the tasks schedule NAME admitted (keys
schedule/NAME/PERIOD-START), not those of a schedule named NAMEly or NAME/x.
A task must match every filter given.`

// filterFlags are the task filters of every command that picks tasks
// (`ledger ls`, and the operator actions through opSelect): one
// vocabulary, the phases.
type filterFlags struct {
	phases []string
	// states is --state, the operator actions' name for --phase before
	// it: hidden, and warned about.
	states                        []string
	kind, prefix, under, schedule string
}

// register adds the filter flags to cmd; what says what they do to the
// tasks they pick ("list", "select").
func (ff *filterFlags) register(cmd *cobra.Command, what string) {
	f := cmd.Flags()
	f.StringSliceVar(&ff.phases, "phase", nil, what+" tasks in these phases (repeated or comma-separated: "+nameList(kvledger.Phases)+`; "claimed" names running)`)
	f.StringSliceVar(&ff.states, "state", nil, "deprecated: --phase")
	_ = f.MarkHidden("state")
	f.StringVar(&ff.kind, "kind", "", what+" tasks of this kind")
	f.StringVar(&ff.prefix, "prefix", "", what+" tasks whose key starts with this string (raw: etl picks etl2/a too)")
	f.StringVar(&ff.under, "under", "", what+` the task of this key and the tasks under it at a "/" (etl/ picks etl and etl/a, not etl2/a)`)
	f.StringVar(&ff.schedule, "schedule", "", what+" the tasks this schedule admitted (schedule/NAME/PERIOD-START keys)")
}

// given reports whether any filter was given.
func (ff *filterFlags) given() bool {
	return len(ff.phases) > 0 || len(ff.states) > 0 || ff.kind != "" || ff.prefix != "" || ff.under != "" || ff.schedule != ""
}

// filter reads the flags into a taskFilter; a bad phase or key path is
// an error naming its flag. The deprecated --state is read as --phase,
// with a warning on warn naming cmd.
func (ff *filterFlags) filter(warn io.Writer, cmd string) (taskFilter, error) {
	f := taskFilter{kind: ff.kind}
	if err := f.setKey(ff.prefix, ff.under, ff.schedule); err != nil {
		return f, err
	}
	if len(ff.states) > 0 {
		fmt.Fprintf(warn, "natscoord: %s: --state is deprecated: use --phase, which takes the same phases\n", cmd)
		if err := f.addPhases("state", ff.states); err != nil {
			return f, err
		}
	}
	return f, f.addPhases("phase", ff.phases)
}

// setKey sets the key filters: a raw prefix, a path under which keys lie
// (a trailing "/" optional) and a schedule's name.
func (f *taskFilter) setKey(prefix, under, schedule string) error {
	f.prefix, f.schedule = prefix, schedule
	if under != "" {
		f.under = strings.TrimSuffix(under, "/")
		if f.under == "" {
			return errors.New(`--under needs a key path, such as etl/ (a lone "/" is no path)`)
		}
	}
	return nil
}

// addStatuses adds the stored statuses named in names, given to flag:
// each is read by kvledger.ParseStatus, and a bad one is an error naming
// the flag and the valid names, and --phase when the name is a phase.
func (f *taskFilter) addStatuses(flag string, names []string) error {
	for _, s := range names {
		st, err := kvledger.ParseStatus(s)
		if err != nil {
			if p, perr := kvledger.ParsePhase(s); perr == nil {
				return fmt.Errorf("--%s: %w; %s is a phase: use --phase %s", flag, err, p, p)
			}
			return fmt.Errorf("--%s: %w", flag, err)
		}
		if f.statuses == nil {
			f.statuses = make(map[kvledger.Status]bool)
		}
		f.statuses[st] = true
	}
	return nil
}

// addPhases adds the phases named in names, given to flag: each is read
// by kvledger.ParsePhase, and a bad one is an error naming the flag and
// the valid names.
func (f *taskFilter) addPhases(flag string, names []string) error {
	for _, s := range names {
		p, err := kvledger.ParsePhase(s)
		if err != nil {
			return fmt.Errorf("--%s: %w", flag, err)
		}
		if f.phases == nil {
			f.phases = make(map[kvledger.Phase]bool)
		}
		f.phases[p] = true
	}
	return nil
}

// match reports whether f picks t, whose phase at now is p.
func (f taskFilter) match(t kvledger.TaskState, p kvledger.Phase) bool {
	return (len(f.statuses) == 0 || f.statuses[t.Status]) && (len(f.phases) == 0 || f.phases[p]) &&
		(f.kind == "" || t.Kind == f.kind) && f.matchKey(string(t.Key))
}

// matchKey reports whether the key filters of f pick key.
func (f taskFilter) matchKey(key string) bool {
	if !strings.HasPrefix(key, f.prefix) || (f.under != "" && !underKey(key, f.under)) {
		return false
	}
	if f.schedule == "" {
		return true
	}
	name, _, ok := worker.ParsePeriodKey(kvledger.IdempotencyKey(key))
	return ok && name == f.schedule
}

// underKey reports whether key is path or lies under it: path followed
// by "/" and anything.
func underKey(key, path string) bool {
	rest, ok := strings.CutPrefix(key, path)
	return ok && (rest == "" || rest[0] == '/')
}

// corrupt returns the stored values of bad that are not records and that
// f picks, nil for none: such a value has no status, phase or kind, so
// only the key filters alone pick any.
func (f taskFilter) corrupt(bad *kvledger.CorruptRecordsError) *kvledger.CorruptRecordsError {
	if bad == nil || len(f.statuses) > 0 || len(f.phases) > 0 || f.kind != "" {
		return nil
	}
	picked := &kvledger.CorruptRecordsError{}
	for _, r := range bad.Records {
		if f.matchKey(corruptKey(r)) {
			picked.Records = append(picked.Records, r)
		}
	}
	if len(picked.Records) == 0 {
		return nil
	}
	return picked
}

// listedTask is one task of `ledger ls --json`: the record and its phase.
type listedTask struct {
	kvledger.TaskState
	Phase kvledger.Phase `json:"phase"`
}
