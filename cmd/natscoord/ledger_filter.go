package main

import (
	"fmt"
	"strings"

	"github.com/natscoord/natscoord/kvledger"
)

// taskFilter is how `ledger ls` and the operator actions pick tasks from
// the ledger: by stored status (the STATUS column of ledger ls), by phase
// (kvledger's TaskState.Phase, so "running" and its stored name "claimed"
// both pick claimed records), kind and key prefix. The zero filter picks
// every task.
type taskFilter struct {
	statuses map[kvledger.Status]bool
	phases   map[kvledger.Phase]bool
	kind     string
	prefix   string
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
		(f.kind == "" || t.Kind == f.kind) &&
		strings.HasPrefix(string(t.Key), f.prefix)
}

// corrupt returns the stored values of bad that are not records and that
// f picks, nil for none: such a value has no status, phase or kind, so
// only a filter by key prefix alone picks any.
func (f taskFilter) corrupt(bad *kvledger.CorruptRecordsError) *kvledger.CorruptRecordsError {
	if bad == nil || len(f.statuses) > 0 || len(f.phases) > 0 || f.kind != "" {
		return nil
	}
	if f.prefix == "" {
		return bad
	}
	picked := &kvledger.CorruptRecordsError{}
	for _, r := range bad.Records {
		if strings.HasPrefix(corruptKey(r), f.prefix) {
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
