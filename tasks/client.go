package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// Client submits tasks to one ledger, runs the workers added to it and
// inspects the ledger. It is safe for concurrent use.
type Client struct {
	cfg     Config
	store   *kvledger.KVStore
	ledger  *kvledger.Ledger
	worker  *worker.Worker
	counter counter

	mu      sync.Mutex
	kinds   map[string]bool
	started bool
	closed  bool

	// released is closed, and closeErr set, by release once the worker
	// has stopped and the store is closed.
	released chan struct{}
	closeErr error
}

// NewClient opens the ledger named by cfg on js and provisions what it
// needs when missing: the ledger bucket (whose stream is also the event
// log: kvledger.EventSource) and the claims' lease bucket. Workers start
// with Start. Close releases everything.
func NewClient(ctx context.Context, js jetstream.JetStream, cfg Config) (*Client, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: nil JetStream", ErrInvalidConfig)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: cfg.Ledger, Replicas: cfg.Replicas, Retention: cfg.Retention})
	if err != nil {
		return nil, err
	}
	l, err := kvledger.New(store)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, store: store, ledger: l, kinds: make(map[string]bool), released: make(chan struct{})}
	if c.worker, err = worker.New(ctx, js, l, cfg.workerConfig()); err != nil {
		store.Close() // a worker setting refused: nothing else holds the store
		return nil, err
	}
	return c, nil
}

// Ledger returns the ledger underneath, for what the client does not
// wrap (snapshots, the fenced claim API of kvledger). Close ends its
// writes too: after it, a write through it fails with kvledger.ErrClosed
// (reads go on).
func (c *Client) Ledger() *kvledger.Ledger { return c.ledger }

// Start starts the workers added with AddWorker: they claim ready tasks
// of their kinds until Close. It returns once the worker has read the
// ledger (bounded by ctx). A client with no worker added starts nothing.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started || c.closed {
		c.mu.Unlock()
		return ErrStarted
	}
	c.started = true
	working := len(c.kinds) > 0
	c.mu.Unlock()
	if !working {
		return nil
	}
	return c.worker.Start(ctx)
}

// Run is Start, then Close when ctx ends, or earlier when the worker
// stops by itself (its watch ended for good): it returns that error.
func (c *Client) Run(ctx context.Context) error {
	if err := c.Start(ctx); err != nil {
		return errors.Join(err, c.Close(context.WithoutCancel(ctx)))
	}
	select {
	case <-ctx.Done():
	case <-c.worker.Done():
	}
	return c.Close(context.WithoutCancel(ctx))
}

// writing refuses a write, or a read that would start a watch (Counts),
// once Close has begun (ErrClosed): Close closes the store, whose bucket
// then refuses writes.
func (c *Client) writing() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return nil
}

// closedErr names a write that raced Close and found the store closed
// (kvledger.ErrClosed) as ErrClosed, keeping the chain: a write the
// store refused was never sent; one it left unanswered may have landed.
func closedErr(err error) error {
	if errors.Is(err, kvledger.ErrClosed) && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}

// Stats is the worker's counters (claims, completions, failures...).
func (c *Client) Stats() worker.Stats { return c.worker.Stats() }

// Close drains the workers (running handlers get Config.DrainTimeout),
// then closes the store: every write of the client, and through Ledger(),
// is refused from then on (ErrClosed, kvledger.ErrClosed). Every
// goroutine the client started has ended when it returns nil or the
// worker's error (worker.Worker.Close).
//
// ctx bounds how long Close waits, not what it releases: when ctx ends
// first (a handler ignores its cancelled context), Close returns ctx's
// cause, and the client closes the store by itself once the last such
// handler has returned (until then its writes are still answered).
// Close is idempotent: a later call waits, bounded by its own ctx, for
// that same end and returns the same result. Like worker.Worker.Close,
// it must not be called from a handler with a ctx that never ends: it
// waits for every running handler, the caller's too.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	first := !c.closed
	c.closed = true
	c.mu.Unlock()
	if first {
		c.counter.stop()
		// The drain, bounded by ctx; release waits for the rest.
		_ = c.worker.Close(ctx)
		go c.release()
	}
	select {
	case <-c.released: // preferred when ctx has ended too
		return c.closeErr
	default:
	}
	select {
	case <-c.released:
		return c.closeErr
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// release closes the store once the worker has stopped: a later
// worker.Close waits, with no bound of its own, for the handlers the
// first one left running, so this goroutine ends when the last of them
// returns. Only the first Close starts it.
func (c *Client) release() {
	c.closeErr = c.worker.Close(context.Background())
	c.store.Close()
	close(c.released)
}
