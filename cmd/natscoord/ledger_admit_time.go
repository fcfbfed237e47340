package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// admitRuntime holds the task-runtime flags of `ledger admit`: the kind a
// worker runs the task as, when it may start, its attempt bound, its
// priority among the ready tasks of its kind and its concurrency group.
type admitRuntime struct {
	kind        string
	runAt       string
	delay       time.Duration
	maxAttempts int
	priority    int
	group       string
	timeout     time.Duration
}

func (r *admitRuntime) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&r.kind, "kind", "", "task kind: the workers with a handler for it run it (natscoord work --kind)")
	f.StringVar(&r.runAt, "run-at", "", "earliest start, RFC 3339 (2026-12-01T15:04:05Z)")
	f.DurationVar(&r.delay, "delay", 0, "earliest start as a delay from now (e.g. 30s); not with --run-at")
	f.IntVar(&r.maxAttempts, "max-attempts", 0, "attempts before the task fails (default: the worker's)")
	f.IntVar(&r.priority, "priority", 0, "order among the ready tasks of the kind: higher starts first (may be negative)")
	f.StringVar(&r.group, "group", "", "concurrency group: workers run at most their --group-limit of its tasks at once")
	f.DurationVar(&r.timeout, "timeout", 0, "bound on each attempt, stored in the task: the worker then stops its handler (natscoord work: SIGTERM, SIGKILL --grace later) and the attempt fails (default: the worker's --timeout)")
}

// submission builds the admission from the flags, checked before any I/O.
func (r *admitRuntime) submission(key string, seq uint64, task any, needs []kvledger.IdempotencyKey) (kvledger.Submission, error) {
	sub := kvledger.Submission{
		Key: kvledger.IdempotencyKey(key), Seq: kvledger.Sequence(seq), Task: task, Needs: needs,
		Kind: r.kind, Delay: r.delay, MaxAttempts: r.maxAttempts, Now: wall.Now(),
		Priority: r.priority, Group: r.group, Timeout: r.timeout,
	}
	switch {
	case r.delay < 0:
		return sub, errors.New("--delay must not be negative")
	case r.delay > 0 && r.runAt != "":
		return sub, errors.New("--run-at and --delay exclude each other")
	case r.maxAttempts < 0:
		return sub, errors.New("--max-attempts must not be negative")
	case r.timeout < 0 || r.timeout > kvledger.MaxTimeout:
		return sub, fmt.Errorf("--timeout must be 0..%v", kvledger.MaxTimeout)
	case len(r.kind) > kvledger.MaxKindBytes:
		return sub, fmt.Errorf("--kind is longer than %d bytes", kvledger.MaxKindBytes)
	case len(r.group) > kvledger.MaxGroupBytes:
		return sub, fmt.Errorf("--group is longer than %d bytes", kvledger.MaxGroupBytes)
	}
	if r.runAt != "" {
		t, err := time.Parse(time.RFC3339Nano, r.runAt)
		if err != nil {
			return sub, fmt.Errorf("--run-at: %q is not an RFC 3339 time", r.runAt)
		}
		sub.RunAt = t
	}
	return sub, nil
}

// runtimeRows are the task-runtime rows of `ledger show`, present only
// when the record uses them.
func runtimeRows(t kvledger.TaskState) [][]string {
	var rows [][]string
	add := func(name, v string) { rows = append(rows, []string{name, v}) }
	if t.Kind != "" {
		add("kind", t.Kind)
	}
	if t.Attempts > 0 || t.MaxAttempts > 0 {
		limit := "worker default"
		if n := kvledger.AttemptLimit(t, 0); n > 0 {
			limit = strconv.Itoa(n)
		}
		add("attempts", strconv.Itoa(t.Attempts)+" of "+limit)
	}
	if !t.RunAt.IsZero() {
		add("run at", timeOrDash(t.RunAt))
	}
	if t.Priority != 0 {
		add("priority", strconv.Itoa(t.Priority))
	}
	if t.Group != "" {
		add("group", t.Group)
	}
	if t.TimeoutMS > 0 {
		add("timeout", t.Timeout().String())
	}
	if t.Snoozes > 0 {
		add("snoozes", strconv.Itoa(t.Snoozes))
	}
	if t.Lease != "" {
		add("lease", t.Lease) // the lease-bucket key keeping the claim alive
	}
	if t.LastError != "" {
		add("last error", oneLineText(t.LastError))
	}
	if t.Cancelled {
		add("cancelled", "yes")
	}
	if len(t.Result) > 0 {
		add("result", string(t.Result))
	}
	return rows
}

// noKindNote is the warning `ledger admit` prints for a task it admitted
// without a kind: a worker claims only the kinds it has a handler for
// (worker: the record watch files a task of an unhandled kind nowhere),
// and natscoord work and tasks.Client refuse the empty kind.
func noKindNote(key kvledger.IdempotencyKey) string {
	return fmt.Sprintf("warning: %q has no kind, so no worker runs it (a worker runs only the kinds it handles: natscoord work --kind K); "+
		"admit it with --kind, or with --no-kind when an owner claims it by hand (ledger claim)", string(key))
}
