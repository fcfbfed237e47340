package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

func init() { extraCommands = append(extraCommands, (*app).workCommand) }

// workOptions are the flags of `natscoord work`.
type workOptions struct {
	ledger      ledgerFlags
	kind        string
	concurrency int
	ttl         time.Duration
	maxAttempts int
	timeout     time.Duration
	snoozeExit  int
	snooze      time.Duration
	backoff     time.Duration
	grace       time.Duration
	drain       time.Duration
	resultLimit int
	owner       string
	leaseBucket string
	groupLimits map[string]int
	rateLimit   string            // --rate-limit N/PERIOD, for kind
	groupRates  map[string]string // --group-rate-limit GROUP=N/PERIOD
	fair        bool
	passSecrets bool
	noSchedules bool
	metrics     workMetricsOptions
}

// Upper bounds of work's flags: far above any sane use, and low enough
// that nothing downstream overflows (a concurrency of 2^62 once wrapped
// the dispatcher's count, and the worker ran nothing).
const (
	maxWorkConcurrency = 4096
	maxWorkAttempts    = 1000
	maxWorkDuration    = 24 * time.Hour // --backoff, --drain
	maxWorkGrace       = time.Hour
)

const workHelp = `work runs CMD once per task of --kind, as a worker of the ledger: it
claims ready tasks (pending, run-at passed, every need completed) as they
appear, by push, and runs CMD for each with:

  stdin                          the task's payload (JSON; empty without one)
  NATSCOORD_TASK_KEY             the task's key
  NATSCOORD_TASK_KIND            its kind
  NATSCOORD_TASK_FENCE           the claim's fence token (pass it to anything
                                 outside the ledger that must refuse a stale worker)
  NATSCOORD_TASK_ATTEMPT         this attempt, from 1
  NATSCOORD_TASK_MAX_ATTEMPTS    the attempts allowed
  NATSCOORD_TASK_BUCKET          the ledger bucket

Exit status 0 completes the task, and CMD's stdout (up to --result-limit
bytes; JSON kept as JSON, other text as a JSON string) becomes its result,
which the tasks that need it can read (natscoord ledger show). Any other
exit status is a failed attempt: the task runs again after a backoff, and
fails once its attempts are used up (its dependents are then blocked).
CMD's stderr passes through, and its last 512 bytes are stored as the
task's last error: shown by ledger show, on the dashboard and in the
ledger's events. Never print secrets on CMD's stderr.

CMD does not get natscoord's and NATS's own settings: every NATS_* and
NATSCOORD_* variable (the server URL with its password, credentials, the
dashboard token) is removed from its environment unless --pass-secrets.

CMD is checked before anything is claimed: natscoord work exits 127 if it
cannot be found (a file on PATH that is not executable is not found, as
the shell's lookup and Go's judge it), 126 if it cannot be run. If it
cannot be started later (the binary was removed), the task is given back
at once (ready again within --backoff), its attempt not counted and the
error kept as its last error, and the worker stops (other running
commands still get --drain) and exits 127 or 126.

A task never runs twice at once. When the task is cancelled, its attempt
runs past its timeout (ledger admit --timeout, else --timeout), or the
worker drains (SIGINT, SIGTERM), CMD's process group gets SIGTERM, and
SIGKILL --grace later if it is still running. A cancelled task ends
cancelled (it shows as cancelling meanwhile and cannot be reopened), a
drained task is given back, not failed, and a timed-out attempt fails ("worker: task timed out
after D") and is retried by the usual rule, but only once CMD and
everything it started have exited (at most --drain + --grace after the
signal): the claim is kept, and renewed, until then. An exit status given
to --snooze-exit snoozes the task: it runs again after --snooze, the
attempt not counted (a task snoozed 100 times fails at its next snooze).
When the claim is lost (this worker could not renew it within --ttl less
a tenth of it, or another took the task over) there is no grace: CMD and
everything it started get SIGKILL at once, at least a tenth of --ttl
(50ms at the least) before the server can expire the claim and another
worker take the task over. When CMD exits, whatever it left running in
the background is stopped as on a drain. On Linux, CMD runs under a small
supervisor (natscoord itself) that stops CMD and everything it started,
grandchildren included, if the worker dies, even by SIGKILL: SIGTERM at
once, SIGKILL a third of --ttl later (at most --grace), before another
worker can take the task over.

Ready tasks start highest --priority first, then in the order they became
ready. With --fair, tasks of different groups (ledger admit --group) take
turns within a priority: this worker starts each group's next task in
turn, so one group's backlog does not hold back another's, and tasks
without a group form one group. Each worker takes its own turns, so
across several workers the groups interleave, but not strictly.

The worker also runs the schedules stored in the ledger for --kind
(natscoord ledger schedule add): it admits one task per period, once per
period however many workers run, and starts or stops a schedule as it is
added or removed. --no-schedules leaves them to other workers.

--rate-limit N/PERIOD starts at most N tasks of --kind in any PERIOD
(whole seconds: 3/2s, 100/m) across every worker that states it, and
--group-rate-limit GROUP=N/PERIOD the same for a group's tasks (ledger
admit --group). Each start takes one of N tokens in the lease bucket,
which the server expires PERIOD after it was taken: no clocks are
compared. A task waiting for a token is not claimed and uses no attempt.
Give every worker the same limits.`

// fairKinds is worker.Config.FairKinds of --fair.
func (o workOptions) fairKinds() []string {
	if !o.fair {
		return nil
	}
	return []string{o.kind}
}

func (a *app) workCommand() *cobra.Command {
	var o workOptions
	cmd := &cobra.Command{
		Use:   "work --kind K [--concurrency N] -- CMD [ARGS...]",
		Short: "Run a command for every task of a kind (payload on stdin, result from stdout)",
		Long:  workHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
				return errors.New("work: give the command after --, e.g. natscoord work --kind echo -- cat")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			// Before anything is claimed: a mistyped command would
			// otherwise fail every task of its kind.
			if err := checkCommand(args[0]); err != nil {
				return err
			}
			return a.runWork(cmd.Context(), o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ledger.bucket, "bucket", defaultLedgerBucket, "ledger bucket")
	f.StringVar(&o.kind, "kind", "", "the kind of task to run (required; ledger admit --kind)")
	f.IntVar(&o.concurrency, "concurrency", 1, "commands run at once")
	f.DurationVar(&o.ttl, "ttl", worker.DefaultClaimTTL, "claim TTL: how soon another worker takes a task over if this one dies (1s..24h)")
	f.IntVar(&o.maxAttempts, "max-attempts", worker.DefaultMaxAttempts, "attempts of a task that does not set its own")
	f.DurationVar(&o.backoff, "backoff", worker.DefaultBackoffBase, "pause after the first failed attempt; doubles each time, jittered")
	f.DurationVar(&o.timeout, "timeout", 0, "bound on each attempt of a task that states none (ledger admit --timeout): CMD then gets SIGTERM, SIGKILL --grace later, and the attempt fails and is retried (default: none)")
	f.IntVar(&o.snoozeExit, "snooze-exit", 0, "an exit status (1..255) that snoozes the task: it runs again after --snooze, the attempt not counted, at most 100 times (default 0: none)")
	f.DurationVar(&o.snooze, "snooze", time.Minute, "with --snooze-exit, how long a snoozed task waits")
	f.DurationVar(&o.grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL when a command must stop")
	f.DurationVar(&o.drain, "drain", worker.DefaultDrainTimeout, "on SIGINT/SIGTERM, how long running commands may finish before they are stopped and given back")
	f.IntVar(&o.resultLimit, "result-limit", worker.DefaultMaxResultBytes, "bytes of stdout kept as the result")
	f.StringVar(&o.owner, "name", "", "this worker's owner id in claims (default <host>:<pid>:<id>)")
	f.StringVar(&o.leaseBucket, "lease-bucket", worker.DefaultLeaseBucket, "bucket of the claims' leases (the same for every worker of the ledger)")
	f.BoolVar(&o.noSchedules, "no-schedules", false, "do not admit the periods of the ledger's stored schedules (natscoord ledger schedule)")
	f.StringToIntVar(&o.groupLimits, "group-limit", nil, "GROUP=N: run at most N tasks of the group (ledger admit --group) at once across all workers; give every worker the same limits (repeatable)")
	f.StringVar(&o.rateLimit, "rate-limit", "", "N/PERIOD: start at most N tasks of --kind per PERIOD (whole seconds, e.g. 3/2s, 100/m) across all workers, judged by the server; give every worker the same limit")
	f.StringToStringVar(&o.groupRates, "group-rate-limit", nil, "GROUP=N/PERIOD: start at most N tasks of the group per PERIOD across all workers (repeatable)")
	f.BoolVar(&o.fair, "fair", false, "take the kind's groups (ledger admit --group) in turn within a priority, so one group's backlog does not hold back another's; tasks without a group form one group")
	f.BoolVar(&o.passSecrets, "pass-secrets", false, passSecretsUsage)
	o.metrics.register(f)
	_ = cmd.MarkFlagRequired("kind")
	return cmd
}

func (o workOptions) validate() error {
	switch {
	case o.kind == "":
		return errors.New("--kind must not be empty")
	case kvlease.ValidateTTL(o.ttl) != nil:
		return fmt.Errorf("--ttl: %w", kvlease.ValidateTTL(o.ttl))
	case o.concurrency < 1 || o.concurrency > maxWorkConcurrency:
		return fmt.Errorf("--concurrency must be 1..%d, got %d", maxWorkConcurrency, o.concurrency)
	case o.maxAttempts < 1 || o.maxAttempts > maxWorkAttempts:
		return fmt.Errorf("--max-attempts must be 1..%d, got %d", maxWorkAttempts, o.maxAttempts)
	case o.backoff <= 0 || o.backoff > maxWorkDuration:
		return fmt.Errorf("--backoff must be positive and at most %v", maxWorkDuration)
	case o.timeout < 0 || o.timeout > kvledger.MaxTimeout:
		return fmt.Errorf("--timeout must be 0..%v", kvledger.MaxTimeout)
	case o.snoozeExit < 0 || o.snoozeExit > 255:
		return fmt.Errorf("--snooze-exit must be 1..255, or 0 for none")
	case o.snooze < 0 || o.snooze > maxWorkDuration:
		return fmt.Errorf("--snooze must be 0..%v", maxWorkDuration)
	case o.grace <= 0 || o.grace > maxWorkGrace:
		return fmt.Errorf("--grace must be positive and at most %v", maxWorkGrace)
	case o.drain < 0 || o.drain > maxWorkDuration:
		return fmt.Errorf("--drain must be 0..%v", maxWorkDuration)
	case o.resultLimit < 0 || o.resultLimit > kvledger.MaxResultBytes:
		return fmt.Errorf("--result-limit must be 0..%d", kvledger.MaxResultBytes)
	}
	for g, n := range o.groupLimits {
		if g == "" || len(g) > kvledger.MaxGroupBytes || n < 1 || n > kvlease.MaxSemaphoreSlots {
			return fmt.Errorf("--group-limit %s=%d: the group must be 1..%d bytes and the limit 1..%d", g, n, kvledger.MaxGroupBytes, kvlease.MaxSemaphoreSlots)
		}
	}
	if _, err := o.rateLimits(); err != nil {
		return err
	}
	return o.metrics.validate()
}

func (a *app) runWork(ctx context.Context, o workOptions, argv []string) error {
	sctx, cancel := a.conn.opContext(ctx)
	defer cancel()
	out := &workPrinter{w: a.stdout, errw: a.stderr, json: a.json}
	// A worker outlives network blips: unlike the one-shot commands it
	// reconnects for as long as it runs (its claims' leases judge whether
	// it was away too long), and says so in one line each way.
	rc := newReconnector(out.say, a.conn.redactAll, "reconnecting, running commands go on while their claims last", "claims and the ledger's watch resume", a.conn.timeout)
	nc, js, err := a.conn.connect(ctx, append([]nats.Option{nats.Name("natscoord-work")}, rc.opts...)...)
	if err != nil {
		return err
	}
	defer rc.close(nc)
	l, err := openLedger(sctx, js, o.ledger.bucket, ledgerCreate)
	if err != nil {
		return err
	}
	defer closeStore(l) // after the worker's Close below: it writes through l until then
	drain := o.drain
	if drain == 0 {
		drain = -1 // the worker's "do not wait"
	}
	met, err := startWorkMetrics(sctx, js, o)
	if err != nil {
		return err
	}
	defer func() { _ = met.close(ctx) }() // after the worker's Close: it serves until the worker ended
	rates, err := o.rateLimits()
	if err != nil {
		return err
	}
	w, err := worker.New(sctx, js, l, worker.Config{
		Clock: wall,
		Owner: kvledger.OwnerID(o.owner), ClaimTTL: o.ttl, Concurrency: o.concurrency,
		MaxAttempts: o.maxAttempts, Timeout: o.timeout, BackoffBase: o.backoff, BackoffMax: max(o.backoff, worker.DefaultBackoffMax),
		DrainTimeout: drain, MaxResultBytes: max(o.resultLimit, 1), Observer: met.observer(out), OpTimeout: a.conn.timeout,
		LeaseBucket: o.leaseBucket, Leases: met.leaseManager(), GroupLimits: o.groupLimits, RateLimits: rates,
		IgnoreStoredSchedules: o.noSchedules, FairKinds: o.fairKinds(),
	})
	if err != nil {
		return err
	}
	r := &commandRunner{argv: argv, grace: o.grace, orphanGrace: min(o.grace, o.ttl/3), limit: o.resultLimit, stderr: a.stderr,
		env: commandEnv(os.Environ(), o.passSecrets), startFailed: make(chan error, 1), snoozeExit: o.snoozeExit, snooze: o.snooze}
	if err := w.Handle(o.kind, r.handle(o.ledger.bucket)); err != nil {
		_ = w.Close(context.WithoutCancel(ctx))
		return err
	}
	if err := w.Start(sctx); err != nil {
		_ = w.Close(context.WithoutCancel(ctx))
		return err
	}
	out.banner(w.Owner(), o, argv)
	met.serve(w, out)
	var failed error
	select {
	case <-ctx.Done():
		out.draining(o.drain, o.grace)
	case failed = <-r.startFailed:
		fmt.Fprintf(a.stderr, "natscoord work: stopping (running commands get --drain)\n")
	case <-w.Done(): // a watch ended for good: the worker closed itself, Close says why
	}
	// The drain: running commands get --drain to finish, then SIGTERM;
	// their claims are given back. The bound covers --grace (and the
	// supervisor's own bound, see stopMargin) as well.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), max(o.drain, 0)+o.grace+stopMargin+2*a.conn.timeout)
	defer ccancel()
	err = w.Close(cctx)
	out.closed(w.Stats())
	if se := (*commandStartError)(nil); errors.As(failed, &se) {
		return exitError{code: se.code, err: fmt.Errorf("work: %w (its task was given back, the attempt not counted)", failed)}
	}
	return err
}

// handle is the worker handler that runs the command for one task.
func (r *commandRunner) handle(bucket string) worker.Handler {
	return func(ctx context.Context, t *worker.Task) error {
		var payload []byte
		if p := t.Payload(); p != nil {
			b, err := json.Marshal(p)
			if err != nil {
				return worker.Permanent(fmt.Errorf("payload of %q: %w", t.Key(), err))
			}
			payload = append(b, '\n')
		}
		res, cut, err := r.run(ctx, execTask{
			key: string(t.Key()), kind: t.Kind(), bucket: bucket, fence: uint64(t.Fence()),
			attempt: t.Attempt(), max: t.MaxAttempts(), payload: payload,
		})
		if errors.Is(err, errStart) {
			// The worker cannot run its command: the task is not at
			// fault, so it goes back at once, uncounted, and the worker
			// stops (it would give back every task it took).
			select {
			case r.startFailed <- err:
			default:
			}
			return worker.GiveBack(err)
		}
		var ee *exitCodeError
		if r.snoozeExit != 0 && errors.As(err, &ee) && ee.code == r.snoozeExit {
			return worker.Snooze(r.snooze)
		}
		if err != nil {
			return err
		}
		if cut {
			fmt.Fprintf(r.stderr, "natscoord work: %s: stdout beyond %d bytes was dropped from the result\n", escapeCell(string(t.Key())), r.limit)
		}
		if len(res) > 0 && r.limit > 0 {
			if err := t.SetRawResult(res); err != nil {
				return worker.Permanent(err)
			}
		}
		return nil
	}
}

// workPrinter prints one line per finished attempt (a JSON line with
// --json) and is the worker's Observer; it also says on stderr when the
// connection goes and comes back.
type workPrinter struct {
	mu     sync.Mutex
	w      io.Writer
	errw   io.Writer
	json   bool
	starts map[startKey]struct{} // attempts running (draining's count)
}

type startKey struct {
	key   kvledger.IdempotencyKey
	fence kvledger.FenceToken
}

func (p *workPrinter) banner(owner kvledger.OwnerID, o workOptions, argv []string) {
	if p.json {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "natscoord work: %s runs kind %s from ledger %q, %d at a time: %s; Ctrl-C drains and stops\n",
		escapeCell(string(owner)), escapeCell(strconv.Quote(o.kind)), o.ledger.bucket, o.concurrency, escapeCell(fmt.Sprintf("%q", argv)))
}

func (p *workPrinter) OnStart(_ context.Context, e worker.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.starts == nil {
		p.starts = make(map[startKey]struct{})
	}
	p.starts[startKey{e.Key, e.Fence}] = struct{}{}
}

func (p *workPrinter) OnFinish(_ context.Context, e worker.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.starts, startKey{e.Key, e.Fence})
	if p.json {
		line := map[string]any{"key": e.Key, "kind": e.Kind, "result": e.Result, "attempt": e.Attempt,
			"fence": e.Fence, "duration_ms": e.Duration.Milliseconds()}
		if e.Err != nil {
			line["error"] = e.Err.Error()
		}
		if !e.RunAt.IsZero() {
			line["run_at"] = e.RunAt
		}
		_ = writeJSONLine(p.w, line)
		return
	}
	// Keys, kinds and errors come from the bucket and from the command:
	// escaped like every table cell, so no escape sequence reaches the
	// terminal.
	fmt.Fprintf(p.w, "%-10s %s  attempt %d  fence %d  %v", e.Result, escapeCell(string(e.Key)), e.Attempt, e.Fence, e.Duration.Round(time.Millisecond))
	if e.Err != nil {
		fmt.Fprintf(p.w, "  %s", escapeCell(oneLineText(e.Err.Error())))
	}
	if !e.RunAt.IsZero() {
		fmt.Fprintf(p.w, "  next %s (in %v)", e.RunAt.Format(workTimeFormat), e.RunAt.Sub(wall.Now()).Round(time.Millisecond))
	}
	fmt.Fprintln(p.w)
}

// workTimeFormat is RFC 3339 with milliseconds: backoffs are often
// shorter than a second.
const workTimeFormat = "2006-01-02T15:04:05.000Z07:00"

func (p *workPrinter) closed(s worker.Stats) {
	if p.json {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "natscoord work: stopped: %d started, %d completed, %d retried, %d failed, %d given back, %d snoozed, %d cancelled, %d lost\n",
		s.Started, s.Completed, s.Retried, s.Failed, s.Released, s.Snoozed, s.Cancelled, s.Lost)
}

// draining says, on Ctrl-C, what the worker waits for before it exits,
// when a command runs: with the default --drain of 30s it may print
// nothing else for that long.
func (p *workPrinter) draining(drain, grace time.Duration) {
	p.mu.Lock()
	running := len(p.starts)
	p.mu.Unlock()
	if running > 0 {
		p.say("draining: %d running, given --drain %v to finish, then SIGTERM (SIGKILL --grace %v later); their tasks are given back once they exited", running, drain, grace)
	}
}

// say prints one line of the worker's own on stderr.
func (p *workPrinter) say(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.errw, "natscoord work: "+format+"\n", args...)
}
