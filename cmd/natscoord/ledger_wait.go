package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// Exit codes of `ledger wait`. When the tasks ended in different ways,
// the first of failed, blocked, cancelled that occurs decides.
const (
	waitCompleted = 0 // every task completed
	waitFailed    = 2 // a task failed (its handler's attempts ran out, or a permanent error)
	waitBlocked   = 3 // a task is blocked: something it needs failed
	waitCancelled = 4 // a task was cancelled by an operator
	waitGaveUp    = 5 // --for elapsed or the wait was interrupted before every task was final
	waitDeleted   = 6 // a task's record was deleted before it was final
)

const waitHelp = `wait blocks until every KEY is final (completed, failed, blocked or
cancelled) and prints how each ended. It learns about changes by push
(a watch on the ledger bucket), not by polling; a KEY that has no record is an error.
When the server goes away, wait says so on stderr, reconnects and watches again.
A need without a record is noted when the wait starts; when the wait gives up, it
says for each task that is not final what it is waiting for.

Exit codes:
  0  every task completed
  2  a task failed
  3  a task is blocked (a task it needs failed)
  4  a task was cancelled
  5  --for elapsed, or the wait was interrupted, before every task was final
  6  a task's record was deleted (ledger rm, Ledger.Delete) before it was final
  1  any other error (bad input, no such task, no server)
When tasks ended differently, the first of failed, blocked, cancelled decides.`

func (a *app) ledgerWait(lf *ledgerFlags) *cobra.Command {
	var within time.Duration
	cmd := &cobra.Command{
		Use:   "wait KEY...",
		Short: "Block until tasks are final; the exit code says how they ended",
		Long:  waitHelp,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if within < 0 {
				return errors.New("--for must not be negative")
			}
			keys, err := waitKeys(args)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if within > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeoutCause(ctx, within, errWaitElapsed)
				defer cancel()
			}
			return a.waitTasks(ctx, lf, keys)
		},
	}
	cmd.Flags().DurationVar(&within, "for", 0, "give up (exit 5) after this long; 0 waits as long as it takes")
	return cmd
}

var errWaitElapsed = errors.New("--for elapsed")

// waitKeys checks the KEY arguments: none empty, none twice.
func waitKeys(args []string) ([]kvledger.IdempotencyKey, error) {
	seen := make(map[string]bool, len(args))
	out := make([]kvledger.IdempotencyKey, 0, len(args))
	for _, k := range args {
		switch {
		case k == "":
			return nil, errors.New("ledger wait: empty key")
		case seen[k]:
			return nil, fmt.Errorf("ledger wait: %q is listed twice", k)
		}
		seen[k] = true
		out = append(out, kvledger.IdempotencyKey(k))
	}
	return out, nil
}

func (a *app) waitTasks(ctx context.Context, lf *ledgerFlags, keys []kvledger.IdempotencyKey) error {
	// The connection reconnects, as events tail's does: a server restart
	// does not end the wait, the watch resumes once the server is back.
	rc := a.reconnecting("ledger wait", "watching the tasks again")
	octx, cancel := a.conn.opContext(ctx)
	nc, js, err := a.conn.connect(octx, rc.opts...)
	cancel()
	if err != nil {
		return err
	}
	defer rc.close(nc)
	octx, cancel = a.conn.opContext(ctx)
	store, err := openStore(octx, js, lf.bucket, false)
	cancel()
	if err != nil {
		return err
	}

	// The ledger over the store, for reads only: the notes
	// below and the reasons given when the wait gives up.
	l, err := kvledger.New(store)
	if err != nil {
		return err
	}
	// A need without a record is said up front: nothing runs the task
	// until someone admits it, and the wait would otherwise just hang.
	for _, k := range keys {
		octx, cancel := a.conn.opContext(ctx)
		t, found, err := l.State(octx, k)
		var missing []kvledger.IdempotencyKey
		if err == nil && found && t.Status == kvledger.StatusPending {
			missing, err = l.Absent(octx, t.Needs...)
		}
		cancel()
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			fmt.Fprintln(a.stderr, "natscoord: ledger wait: "+escapeCell(missingNote(k, missing)))
		}
	}

	load := func(k kvledger.IdempotencyKey) (kvledger.TaskState, bool, error) {
		octx, cancel := a.conn.opContext(ctx)
		defer cancel()
		return store.Load(octx, k)
	}
	w := &taskWait{keys: keys, bucket: lf.bucket, load: load, last: map[kvledger.IdempotencyKey]kvledger.TaskState{}}
	err = a.watchUntilFinal(ctx, nc, store, w)
	final := w.finalRecords()
	var gone taskDeletedError
	switch {
	case ctx.Err() != nil:
		return a.waitGaveUp(ctx, l, keys, final)
	case errors.As(err, &gone):
		if err := a.printWaited(keys, final, gone.key, nil); err != nil {
			return err
		}
		return exitError{code: waitDeleted, err: err}
	case err != nil:
		return err
	}
	if err := a.printWaited(keys, final, "", nil); err != nil {
		return err
	}
	code, why := waitOutcome(keys, final)
	if code == waitCompleted {
		return nil
	}
	return exitError{code: code, err: errors.New(why)}
}

// waitGaveUp prints the tasks when the wait ends early, and for each one
// that is not final why not (waitingReason), in the JSON rows and on the
// error line: a bare "-" left a need without a record unexplained.
func (a *app) waitGaveUp(ctx context.Context, l *kvledger.Ledger, keys []kvledger.IdempotencyKey, final map[kvledger.IdempotencyKey]kvledger.TaskState) error {
	waiting := make(map[kvledger.IdempotencyKey]string)
	var reasons []string
	// ctx has ended: the reads get a bound of their own, one for all.
	octx, cancel := a.conn.opContext(context.WithoutCancel(ctx))
	defer cancel()
	for _, k := range keys {
		if _, done := final[k]; done {
			continue
		}
		waiting[k] = waitingReason(octx, l, k)
		reasons = append(reasons, escapeCell(string(k))+": "+waiting[k])
	}
	if err := a.printWaited(keys, final, "", waiting); err != nil {
		return err
	}
	why := "interrupted"
	if errors.Is(context.Cause(ctx), errWaitElapsed) {
		why = errWaitElapsed.Error()
	}
	return exitError{code: waitGaveUp, err: fmt.Errorf("ledger wait: %s with %d of %d tasks final; %s", why, len(final), len(keys), strings.Join(reasons, "; "))}
}

// outcome names how a final task ended: completed, failed, blocked or
// cancelled; "-" while it is not final.
func outcome(t kvledger.TaskState, final bool) string {
	switch {
	case !final:
		return "-"
	case t.Cancelled:
		return "cancelled"
	}
	return string(t.Status)
}

// waitOutcome is the exit code for the final records and the line that
// explains a non-zero one.
func waitOutcome(keys []kvledger.IdempotencyKey, final map[kvledger.IdempotencyKey]kvledger.TaskState) (int, string) {
	count := map[string][]kvledger.IdempotencyKey{}
	for _, k := range keys {
		o := outcome(final[k], true)
		count[o] = append(count[o], k)
	}
	for _, c := range []struct {
		name string
		code int
	}{{"failed", waitFailed}, {"blocked", waitBlocked}, {"cancelled", waitCancelled}} {
		if ks := count[c.name]; len(ks) > 0 {
			return c.code, fmt.Sprintf("ledger wait: %d of %d tasks %s (first: %s)", len(ks), len(keys), c.name, ks[0])
		}
	}
	return waitCompleted, ""
}

// printWaited prints how each key ended; deleted names the key whose
// record was deleted before it was final, if any, and waiting says, for
// the tasks that are not final, why not.
func (a *app) printWaited(keys []kvledger.IdempotencyKey, final map[kvledger.IdempotencyKey]kvledger.TaskState, deleted kvledger.IdempotencyKey, waiting map[kvledger.IdempotencyKey]string) error {
	type row struct {
		Key     kvledger.IdempotencyKey `json:"key"`
		Outcome string                  `json:"outcome"`
		Final   bool                    `json:"final"`
		Waiting string                  `json:"waiting,omitempty"`
		Task    *kvledger.TaskState     `json:"task,omitempty"`
	}
	rows := make([]row, 0, len(keys))
	table := make([][]string, 0, len(keys))
	for _, k := range keys {
		t, done := final[k]
		r := row{Key: k, Outcome: outcome(t, done), Final: done, Waiting: waiting[k]}
		if k == deleted {
			r.Outcome = "deleted"
		}
		cells := []string{string(k), r.Outcome, "-", "-", "-"}
		if done {
			r.Task = &t
			cells[2] = strconv.Itoa(t.Attempts)
			cells[3] = dash(string(t.BlockedBy))
			cells[4] = dash(oneLineText(t.LastError))
		}
		rows = append(rows, r)
		table = append(table, cells)
	}
	if a.json {
		return writeJSON(a.stdout, rows)
	}
	return writeTable(a.stdout, []string{"KEY", "OUTCOME", "ATTEMPTS", "BLOCKED-BY", "LAST-ERROR"}, table)
}

// oneLineText folds whitespace (newlines included) into single spaces.
func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// errLine is err's text for one line of output: passed through redact
// (secrets in URLs), folded onto one line and escaped as a table cell.
func errLine(err error, redact func(string) string) string {
	return escapeCell(oneLineText(redact(err.Error())))
}
