package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/events"
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
	backoff     time.Duration
	grace       time.Duration
	drain       time.Duration
	resultLimit int
	owner       string
	leaseBucket string
	metrics     workMetricsOptions
}

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
CMD's stderr passes through.

When the claim is lost (this worker could not renew it in time, or another
took the task over), the task is cancelled, or the worker drains (SIGINT,
SIGTERM), CMD's process group gets SIGTERM, and SIGKILL --grace later if
it is still running. A drained task is given back, not failed, so another
worker starts it at once.`

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
	f.DurationVar(&o.grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL when a command must stop")
	f.DurationVar(&o.drain, "drain", worker.DefaultDrainTimeout, "on SIGINT/SIGTERM, how long running commands may finish before they are stopped and given back")
	f.IntVar(&o.resultLimit, "result-limit", worker.DefaultMaxResultBytes, "bytes of stdout kept as the result")
	f.StringVar(&o.owner, "name", "", "this worker's owner id in claims (default <host>:<pid>:<id>)")
	f.StringVar(&o.leaseBucket, "lease-bucket", worker.DefaultLeaseBucket, "bucket of the claims' leases (the same for every worker of the ledger)")
	o.metrics.register(f)
	_ = cmd.MarkFlagRequired("kind")
	return cmd
}

func (o workOptions) validate() error {
	switch {
	case o.kind == "":
		return errors.New("--kind must not be empty")
	case o.concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, got %d", o.concurrency)
	case o.maxAttempts < 1:
		return fmt.Errorf("--max-attempts must be at least 1, got %d", o.maxAttempts)
	case o.backoff <= 0:
		return errors.New("--backoff must be positive")
	case o.grace <= 0:
		return errors.New("--grace must be positive")
	case o.drain < 0:
		return errors.New("--drain must not be negative")
	case o.resultLimit < 0 || o.resultLimit > kvledger.MaxResultBytes:
		return fmt.Errorf("--result-limit must be 0..%d", kvledger.MaxResultBytes)
	}
	return o.metrics.validate()
}

func (a *app) runWork(ctx context.Context, o workOptions, argv []string) error {
	sctx, cancel := a.conn.opContext(ctx)
	defer cancel()
	// A worker outlives network blips: unlike the one-shot commands it
	// reconnects for as long as it runs (its claims' leases judge whether
	// it was away too long).
	nc, js, err := a.conn.connect(ctx, nats.Name("natscoord-work"), nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	l, err := openLedger(sctx, js, o.ledger.bucket, ledgerCreate, events.JetStreamBusConfig{})
	if err != nil {
		return err
	}
	defer func() { _ = l.Close(context.Background()) }()
	drain := o.drain
	if drain == 0 {
		drain = -1 // the worker's "do not wait"
	}
	out := &workPrinter{w: a.stdout, json: a.json}
	met, err := startWorkMetrics(sctx, js, o)
	if err != nil {
		return err
	}
	defer func() { _ = met.close(ctx) }() // after the worker's Close: it serves until the worker ended
	w, err := worker.New(sctx, js, l, worker.Config{
		Owner: kvledger.OwnerID(o.owner), ClaimTTL: o.ttl, Concurrency: o.concurrency,
		MaxAttempts: o.maxAttempts, BackoffBase: o.backoff, BackoffMax: max(o.backoff, worker.DefaultBackoffMax),
		DrainTimeout: drain, MaxResultBytes: max(o.resultLimit, 1), Observer: met.observer(out), OpTimeout: a.conn.timeout,
		LeaseBucket: o.leaseBucket, Leases: met.leaseManager(),
	})
	if err != nil {
		return err
	}
	r := &commandRunner{argv: argv, grace: o.grace, limit: o.resultLimit, stderr: a.stderr, env: workerEnv()}
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
	<-ctx.Done()
	// The drain: running commands get --drain to finish, then SIGTERM;
	// their claims are given back. The bound covers --grace as well.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), max(o.drain, 0)+o.grace+2*a.conn.timeout)
	defer ccancel()
	err = w.Close(cctx)
	out.closed(w.Stats())
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
			return worker.Permanent(err) // every attempt would fail alike
		}
		if err != nil {
			return err
		}
		if cut {
			fmt.Fprintf(r.stderr, "natscoord work: %s: stdout beyond %d bytes was dropped from the result\n", t.Key(), r.limit)
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
// --json) and is the worker's Observer.
type workPrinter struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
}

func (p *workPrinter) banner(owner kvledger.OwnerID, o workOptions, argv []string) {
	if p.json {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "natscoord work: %s runs kind %q from ledger %q, %d at a time: %q; Ctrl-C drains and stops\n",
		owner, o.kind, o.ledger.bucket, o.concurrency, argv)
}

func (p *workPrinter) OnStart(context.Context, worker.Event) {}

func (p *workPrinter) OnFinish(_ context.Context, e worker.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	fmt.Fprintf(p.w, "%-10s %s  attempt %d  fence %d  %v", e.Result, e.Key, e.Attempt, e.Fence, e.Duration.Round(time.Millisecond))
	if e.Err != nil {
		fmt.Fprintf(p.w, "  %s", oneLineText(e.Err.Error()))
	}
	if !e.RunAt.IsZero() {
		fmt.Fprintf(p.w, "  next %s", e.RunAt.Format(time.RFC3339))
	}
	fmt.Fprintln(p.w)
}

func (p *workPrinter) closed(s worker.Stats) {
	if p.json {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "natscoord work: stopped: %d started, %d completed, %d retried, %d failed, %d given back\n",
		s.Started, s.Completed, s.Retried, s.Failed, s.Released)
}
