package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

func init() { extraCommands = append(extraCommands, (*app).demoCommand) }

// demoOptions are the demo's own flags.
type demoOptions struct {
	workers  int
	deadline time.Duration
	keep     bool
	ui       demoUIOptions
}

func (a *app) demoCommand() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the main job: a task graph, leased workers with fencing, a failure, a leader",
		Long: "demo starts an embedded NATS server (or uses --server), admits a dependency graph of\n" +
			"12 tasks into a ledger, and runs several workers, each with its own connection, that\n" +
			"elect a leader and run the tasks on the task runtime (kvledger/worker): ready tasks are\n" +
			"found by push and claimed under fenced, automatically renewed leases. integ-test fails,\n" +
			"so the tasks that need it end blocked; the leader claims docs and pauses, no longer\n" +
			"renewing its lease; once the server expires it another worker takes docs over, and the\n" +
			"paused worker's late completion is refused by its stale fence. Events are shown live; a\n" +
			"summary table ends the run. The exit code is 0 when every task ended as predicted.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.workers < 2 || o.workers > 16 {
				return fmt.Errorf("--workers must be 2..16, got %d", o.workers)
			}
			if o.deadline <= 0 {
				return errors.New("--deadline must be positive")
			}
			return a.runDemo(cmd.Context(), o, cmd.Flags().Changed("server"))
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.workers, "workers", 4, "number of workers, each with its own NATS connection (2..16)")
	f.DurationVar(&o.deadline, "deadline", 30*time.Second, "give up (non-zero exit) if the run has not ended by then")
	f.BoolVar(&o.keep, "keep", false, "keep the demo's ledger bucket (its events) afterwards (with --server)")
	o.ui.register(f)
	return cmd
}

// dialer opens one named connection: one demo "process".
type dialer func(name string) (*nats.Conn, jetstream.JetStream, error)

// demoDialer returns connections to an embedded server started here, or to
// --server when it was given.
func (a *app) demoDialer(ctx context.Context, remote bool) (dialer, string, func(), error) {
	if remote {
		opts, err := a.conn.options()
		if err != nil {
			return nil, "", nil, err
		}
		url := a.conn.url()
		d := func(name string) (*nats.Conn, jetstream.JetStream, error) {
			nc, err := nats.Connect(url, append(opts, nats.Name(name))...)
			if err != nil {
				return nil, nil, fmt.Errorf("connect %s: %w", redactURLs(url), err)
			}
			js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(a.conn.timeout))
			if err != nil {
				nc.Close()
				return nil, nil, err
			}
			return nc, js, nil
		}
		return d, redactURLs(url), func() {}, nil
	}
	srv, err := embedded.Start(ctx, embedded.Options{InProcessOnly: true})
	if err != nil {
		return nil, "", nil, err
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	d := func(name string) (*nats.Conn, jetstream.JetStream, error) {
		nc, err := srv.Connect(nats.Name(name))
		if err != nil {
			return nil, nil, err
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		return nc, js, nil
	}
	return d, "an embedded server", stop, nil
}

// demoNote is a line a worker wants the reporter to print.
type demoNote string

func (a *app) runDemo(parent context.Context, o demoOptions, remote bool) error {
	start := wall.Now()
	ctx, cancel := context.WithTimeout(parent, o.deadline+o.ui.waitBudget())
	defer cancel()
	dial, where, stopServer, err := a.demoDialer(ctx, remote)
	if err != nil {
		return err
	}
	defer stopServer()

	runID := nuid.Next()
	run := &demoRun{bucket: "natscoord_demo_" + runID, runID: runID}
	nc, js, err := dial("natscoord-demo-reporter")
	if err != nil {
		return err
	}
	defer nc.Close()
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: run.bucket,
		Description: "natscoord demo ledger (removed after the run unless --keep)"})
	if err != nil {
		return err
	}
	defer store.Close() // after everything deferred below that writes through it, before nc closes
	if remote && !o.keep {
		defer run.cleanUp(context.WithoutCancel(parent), js) // after the workers closed: deferred first
	}
	reporter, err := kvledger.New(store)
	if err != nil {
		return err
	}
	if o.ui.on {
		stopUI, err := a.demoUI(ctx, parent, js, run, o.ui)
		if err != nil {
			return err
		}
		defer stopUI()
	}

	// The reporter's own subscription: every event of this run, in order
	// per key, handed to this goroutine.
	evc := make(chan events.Event, 512)
	done := make(chan struct{})
	defer close(done)
	live, err := events.SubscribeLive(nc, store.EventSource(), events.LiveConfig{}, func(e events.Event) {
		select {
		case evc <- e:
		case <-done:
		}
	}, nil)
	if err != nil {
		return err
	}
	defer func() { _ = live.Close() }()

	notes := make(chan demoNote, 4*o.workers)
	human := !a.json
	if human {
		fmt.Fprintf(a.stdout, "natscoord demo: %d tasks, %d workers, ledger %q on %s\n", len(demoGraph), o.workers, run.bucket, where)
	}

	workers, closeWorkers, err := startDemoWorkers(ctx, dial, run, o.workers, runID)
	switch {
	case err != nil && ctx.Err() == nil:
		return err
	case err != nil:
		// The deadline ran out while the workers started (a loaded
		// machine, a short --deadline): the run is reported as any run
		// that did not finish in time, below.
		workers, closeWorkers = nil, func() {}
	}
	defer closeWorkers()

	errc := make(chan error, 2*o.workers)
	started := make(chan struct{}) // closed once the graph is admitted
	var startOnce sync.Once
	leadDone := make(chan struct{}) // closed when the first leader's part has ended
	var leadOnce sync.Once
	var campWG, startWG sync.WaitGroup
	campCtx, stopCampaigns := context.WithCancel(ctx)
	defer stopCampaigns()
	note := func(s string) {
		select {
		case notes <- demoNote(s):
		case <-campCtx.Done():
		}
	}
	isLeader := func(name kvledger.OwnerID) bool {
		run.mu.Lock()
		defer run.mu.Unlock()
		return run.leader == name
	}
	for _, w := range workers {
		campWG.Go(func() {
			term, err := w.cand.campaign(campCtx)
			if err != nil {
				if campCtx.Err() == nil {
					errc <- fmt.Errorf("%s: campaign: %w", w.name, err)
				}
				return
			}
			run.mu.Lock()
			run.leaders++
			run.leader = w.name
			run.term = term
			run.mu.Unlock()
			note(fmt.Sprintf("%s was elected leader (term %d); it admits the graph", w.name, term))
			err = w.lead(campCtx, func() { startOnce.Do(func() { close(started) }) }, note)
			leadOnce.Do(func() { close(leadDone) })
			if err != nil && campCtx.Err() == nil {
				errc <- err
			}
		})
		// Every other worker's runtime starts once the graph is admitted,
		// so that who blocks whom does not depend on timing; the leader
		// starts its own after its pause.
		startWG.Go(func() {
			select {
			case <-started:
			case <-campCtx.Done():
				return
			}
			if isLeader(w.name) {
				return
			}
			if err := w.rt.Start(campCtx); err != nil && campCtx.Err() == nil {
				errc <- fmt.Errorf("%s: start: %w", w.name, err)
			}
		})
	}
	// On every way out, stop the campaigns and starts before waiting for
	// them (closeWorkers then drains the runtimes).
	defer func() { stopCampaigns(); campWG.Wait(); startWG.Wait() }()

	prog := newProgress(len(demoGraph))
	var (
		runErr         error
		extraTakeovers []string
	)
	stalling := (<-chan struct{})(leadDone)
wait:
	for prog.final() < len(demoGraph) || stalling != nil {
		select {
		case e := <-evc:
			prog.apply(e)
			if e.Name == kvledger.TakenOverEvent && kvledger.IdempotencyKey(e.Key) != demoStalling {
				// Only the paused worker's claim may be taken over: any
				// other takeover took a live worker's task.
				extraTakeovers = append(extraTakeovers, e.Key)
			}
			if human {
				printDemoEvent(a.stdout, wall.Now().Sub(start), e, prog)
			}
		case n := <-notes:
			if human {
				fmt.Fprintf(a.stdout, "%7.2fs  %s\n", wall.Now().Sub(start).Seconds(), n)
			}
		case <-stalling:
			stalling = nil
		case err := <-errc:
			runErr = err
			break wait
		case <-ctx.Done():
			runErr = fmt.Errorf("demo did not finish within --deadline %v", o.deadline)
			break wait
		}
	}
	stopCampaigns()
	campWG.Wait()
	for {
		select {
		case n := <-notes:
			if human {
				fmt.Fprintf(a.stdout, "%7.2fs  %s\n", wall.Now().Sub(start).Seconds(), n)
			}
			continue
		default:
		}
		break
	}

	sctx, scancel := context.WithTimeout(context.WithoutCancel(parent), 5*time.Second)
	defer scancel()
	snap, err := reporter.Snapshot(sctx)
	if err != nil {
		return errors.Join(runErr, err)
	}
	sum := summarize(run, snap, o.workers, wall.Now().Sub(start))
	if len(extraTakeovers) > 0 {
		sum.Problems = append(sum.Problems, fmt.Sprintf("claims of live workers were taken over: %s", strings.Join(extraTakeovers, ", ")))
		sum.OK = false
	}
	if runErr != nil {
		sum.Problems = append([]string{a.conn.redact(runErr.Error())}, sum.Problems...)
		sum.OK = false
	}
	if a.json {
		err = writeJSON(a.stdout, sum)
	} else {
		err = printDemoSummary(a.stdout, sum)
	}
	if err != nil {
		return err
	}
	if !sum.OK {
		return exitError{code: 1, err: fmt.Errorf("demo: unexpected outcome: %s", sum.Problems[0])}
	}
	return nil
}

// demoWorkerSet is a started worker plus what closes it.
type demoWorkerSet struct {
	*demoWorker
	cand *candidate
}

// startDemoWorkers gives each worker its own connection, ledger handle,
// lease manager, task runtime (not started yet) and candidacy. The
// returned function drains the runtimes and closes everything.
func startDemoWorkers(ctx context.Context, dial dialer, run *demoRun, n int, runID string) ([]demoWorkerSet, func(), error) {
	var ws []demoWorkerSet
	closeAll := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, w := range ws {
			if w.rt != nil {
				wg.Go(func() { _ = w.rt.Close(cctx) })
			}
		}
		wg.Wait()
		for _, w := range ws {
			if w.cand != nil {
				_ = w.cand.close(cctx)
			}
			if w.leases != nil {
				_ = w.leases.Close(cctx)
			}
			if w.ledger != nil {
				closeStore(w.ledger) // its runtime, which wrote through it, closed above
			}
			w.nc.Close()
		}
	}
	for i := range n {
		name := kvledger.OwnerID(fmt.Sprintf("worker-%d", i+1))
		nc, js, err := dial("natscoord-demo-" + string(name))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		w := demoWorkerSet{demoWorker: &demoWorker{name: name, index: i, nc: nc, js: js, run: run}}
		ws = append(ws, w)
		last := &ws[len(ws)-1]
		last.ledger, err = openLedger(ctx, js, run.bucket, ledgerCreate)
		if err == nil {
			last.leases, err = kvlease.NewManager(ctx, js, kvlease.Config{Bucket: run.claimsBucket(), Holder: string(name)})
		}
		if err == nil {
			err = last.newRuntime(ctx)
		}
		if err == nil {
			last.cand, err = newCandidate(ctx, js, runID, string(name))
		}
		if err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return ws, closeAll, nil
}
