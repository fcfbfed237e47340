package main

import (
	"context"
	"crypto/rand"
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
	"github.com/natscoord/natscoord/kvledger"
)

func init() { extraCommands = append(extraCommands, (*app).demoCommand) }

// demoOptions are the demo's own flags.
type demoOptions struct {
	workers  int
	detail   bool
	deadline time.Duration
	keep     bool
	ui       demoUIOptions
}

func (a *app) demoCommand() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a task graph as users do: Go services (tasks.Client) and `natscoord work` processes",
		Long: "demo starts an embedded NATS server (or uses --server) and runs a build pipeline of 12\n" +
			"tasks the way an application does. Go services, each with its own connection and\n" +
			"tasks.Client, run the \"build\" tasks with a typed handler; they elect a leader, which\n" +
			"submits the graph (Submit with needs) and waits for it (Wait). Two `natscoord work`\n" +
			"processes, started from this executable, run the \"shell\" tasks as a shell command.\n" +
			"fetch-deps fails once and is retried; integ-test fails, so the tasks that need it end\n" +
			"blocked; on Linux, docs hangs and the demo kills its worker, and once the server has\n" +
			"expired the dead worker's claim the other worker runs docs again. The report says what\n" +
			"ran, in what order, and why; --detail adds the ledger underneath (every event with its\n" +
			"fence token, the claims, and a stale fence refused). The exit code is 0 when every\n" +
			"task ended as predicted.",
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
	f.IntVar(&o.workers, "workers", 3, "number of Go services, each with its own NATS connection and tasks.Client (2..16)")
	f.BoolVar(&o.detail, "detail", false, "also show the ledger underneath: every event with its fence token, the claims, a stale fence refused")
	f.DurationVar(&o.deadline, "deadline", 30*time.Second, "give up (non-zero exit) if the run has not ended by then")
	f.BoolVar(&o.keep, "keep", false, "keep the demo's ledger bucket (its events) afterwards (with --server)")
	o.ui.register(f)
	return cmd
}

// dialer opens one named connection: one demo "process".
type dialer func(name string) (*nats.Conn, jetstream.JetStream, error)

// demoServer is the server a run uses: how its in-process services
// connect, how its `natscoord work` children do, and what stops it.
type demoServer struct {
	dial  dialer
	child demoChildConn
	where string
	stop  func()
}

// demoUser is the user of the demo's embedded server. Its password is
// random: the server listens on loopback for the demo's children, and
// no other local process may use it.
const demoUser = "natscoord-demo"

// startDemoServer starts an embedded server, or connects to --server
// when it was given.
func (a *app) startDemoServer(ctx context.Context, remote bool) (demoServer, error) {
	if remote {
		opts, err := a.conn.options()
		if err != nil {
			return demoServer{}, err
		}
		url := a.conn.url()
		child, err := a.conn.childConn(url)
		if err != nil {
			return demoServer{}, err
		}
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
		return demoServer{dial: d, child: child, where: redactURLs(url), stop: func() {}}, nil
	}
	password := rand.Text()
	srv, err := embedded.Start(ctx, embedded.Options{Auth: embedded.Auth{User: demoUser, Password: password}})
	if err != nil {
		return demoServer{}, err
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	own := connFlags{user: demoUser, password: secretFlag{value: password}, timeout: a.conn.timeout}
	child, err := own.childConn(srv.ClientURL())
	if err != nil {
		stop()
		return demoServer{}, err
	}
	return demoServer{dial: embeddedDialer(srv), child: child, where: "an embedded server", stop: stop}, nil
}

// embeddedDialer connects in-process to srv.
func embeddedDialer(srv *embedded.Server) dialer {
	return func(name string) (*nats.Conn, jetstream.JetStream, error) {
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
}

// demoProcs is the number of `natscoord work` processes: two, so that one
// can take over what the other was running when it died.
const demoProcs = 2

func (a *app) runDemo(parent context.Context, o demoOptions, remote bool) error {
	start := wall.Now()
	ctx, cancel := context.WithTimeout(parent, o.deadline+o.ui.waitBudget())
	defer cancel()
	srv, err := a.startDemoServer(ctx, remote)
	if err != nil {
		return err
	}
	defer srv.stop()

	runID := nuid.Next()
	run := &demoRun{bucket: "natscoord_demo_" + runID, runID: runID, crash: demoCanCrash,
		names: map[kvledger.OwnerID]string{}}
	nc, js, err := srv.dial("natscoord-demo-reporter")
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

	rep := newDemoReport(a.stdout, !a.json, o.detail, run, start)
	rep.header(o.workers, srv.where)

	procs, stopProcs, err := startDemoProcs(run, srv.child, demoProcs)
	if err != nil {
		return err
	}
	defer stopProcs() // after the services closed: deferred first
	procExit := make(chan *demoProc, len(procs))
	for _, p := range procs {
		go func() {
			select {
			case <-p.done:
				select {
				case procExit <- p:
				case <-done:
				}
			case <-done:
			}
		}()
	}

	services, closeServices, err := startDemoServices(ctx, srv.dial, run, o.workers)
	switch {
	case err != nil && ctx.Err() == nil:
		return err
	case err != nil:
		// The deadline ran out while the services started (a loaded
		// machine, a short --deadline): the run is reported as any run
		// that did not finish in time, below.
		services, closeServices = nil, func() {}
	}
	defer closeServices()

	// Every service campaigns; the first leader submits the graph and
	// waits for it with its tasks.Client.
	errc := make(chan error, len(services))
	waited := make(chan map[kvledger.IdempotencyKey]kvledger.TaskState, 1)
	var campWG sync.WaitGroup
	campCtx, stopCampaigns := context.WithCancel(ctx)
	defer func() { stopCampaigns(); campWG.Wait() }()
	for _, s := range services {
		campWG.Go(func() {
			term, err := s.cand.campaign(campCtx)
			if err != nil {
				if campCtx.Err() == nil {
					errc <- fmt.Errorf("%s: campaign: %w", s.name, err)
				}
				return
			}
			run.mu.Lock()
			run.leaders++
			run.leader, run.term = s.name, term
			run.mu.Unlock()
			final, err := s.lead(campCtx)
			if err != nil {
				if campCtx.Err() == nil {
					errc <- err
				}
				return
			}
			select {
			case waited <- final:
			case <-campCtx.Done():
			}
		})
	}

	prog := newProgress(len(demoGraph))
	claimedBy := map[string]string{} // key -> owner of its latest claim
	var (
		runErr         error
		extraTakeovers []string
		final          map[kvledger.IdempotencyKey]kvledger.TaskState
	)
wait:
	for final == nil || prog.final() < len(demoGraph) {
		select {
		case e := <-evc:
			prog.apply(e)
			if e.Name == kvledger.TakenOverEvent && !run.wasKilled(claimedBy[e.Key]) {
				// Only the killed worker's claims may be taken over (docs,
				// and a task whose completion it had not yet written):
				// any other takeover took a live worker's task.
				extraTakeovers = append(extraTakeovers, e.Key)
			}
			if e.Name == kvledger.ClaimedEvent || e.Name == kvledger.TakenOverEvent {
				claimedBy[e.Key] = e.Owner
			}
			if p := run.crashes(e, procs); p != nil {
				p.kill()
			}
			rep.event(e)
		case p := <-procExit:
			if !run.wasKilled(p.name) {
				runErr = p.exited()
				break wait
			}
		case final = <-waited:
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
	if final != nil {
		rep.leaderWaited()
	}

	sctx, scancel := context.WithTimeout(context.WithoutCancel(parent), 5*time.Second)
	defer scancel()
	run.checkStaleFence(sctx, reporter)
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
		err = rep.summary(sum)
	}
	if err != nil {
		return err
	}
	if !sum.OK {
		return exitError{code: 1, err: fmt.Errorf("demo: unexpected outcome: %s", sum.Problems[0])}
	}
	return nil
}
