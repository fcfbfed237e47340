package worker_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

var seq atomic.Int64

// env is a ledger on a fresh bucket and a fresh lease bucket.
type env struct {
	t      *testing.T
	js     jetstream.JetStream
	led    *kvledger.Ledger
	leases string
}

func newEnv(t *testing.T, js jetstream.JetStream, replicas int) *env {
	t.Helper()
	n := seq.Add(1)
	store := natstest.Open(t, "ledger bucket", func(ctx context.Context) (*kvledger.KVStore, error) {
		return kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: fmt.Sprintf("wledger%d", n), Replicas: replicas})
	})
	if replicas > 1 {
		natstest.Eventually(t, 20*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, _, err := store.Load(ctx, "probe")
			return err == nil
		}, "ledger bucket has a leader")
	}
	led, err := kvledger.New(store)
	require.NoError(t, err)
	return &env{t: t, js: js, led: led, leases: fmt.Sprintf("wleases%d", n)}
}

// worker returns a worker with the env's lease bucket, handlers
// registered by reg, started, and closed by t.Cleanup.
func (e *env) worker(cfg worker.Config, reg func(w *worker.Worker)) *worker.Worker {
	e.t.Helper()
	if cfg.LeaseBucket == "" && cfg.Leases == nil {
		cfg.LeaseBucket = e.leases
	}
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase, cfg.BackoffMax = 20*time.Millisecond, 100*time.Millisecond
	}
	w := natstest.Open(e.t, "worker", func(ctx context.Context) (*worker.Worker, error) {
		return worker.New(ctx, e.js, e.led, cfg)
	})
	if reg != nil {
		reg(w)
	}
	ctx := natstest.Context(e.t, 20*time.Second)
	require.NoError(e.t, w.Start(ctx))
	e.t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(e.t, w.Close(cctx))
	})
	return w
}

func (e *env) submit(sub kvledger.Submission) {
	e.t.Helper()
	ok, err := e.led.Submit(natstest.Context(e.t, 10*time.Second), "test", sub)
	require.NoError(e.t, err)
	require.True(e.t, ok, "admitted %q", sub.Key)
}

func (e *env) waitFinal(d time.Duration, keys ...kvledger.IdempotencyKey) map[kvledger.IdempotencyKey]kvledger.TaskState {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	final, err := e.led.WaitFinal(ctx, keys...)
	require.NoError(e.t, err, "final so far: %v", final)
	return final
}

func (e *env) state(k kvledger.IdempotencyKey) kvledger.TaskState {
	e.t.Helper()
	s, found, err := e.led.State(natstest.Context(e.t, 5*time.Second), k)
	require.NoError(e.t, err)
	require.True(e.t, found, "record %q", k)
	return s
}

// ledgerOn opens another Ledger on the env's bucket through js (another
// connection: another process, as far as the server can tell).
func (e *env) ledgerOn(js jetstream.JetStream) *kvledger.Ledger {
	e.t.Helper()
	name := e.led.Store().(*kvledger.KVStore).Name()
	store := natstest.Open(e.t, "ledger bucket", func(ctx context.Context) (*kvledger.KVStore, error) {
		return kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: name})
	})
	led, err := kvledger.New(store)
	require.NoError(e.t, err)
	return led
}

// startOn starts a worker on its own ledger handle and connection; the
// caller closes it (closeWorker), since a crashed one may fail to.
func (e *env) startOn(js jetstream.JetStream, led *kvledger.Ledger, cfg worker.Config, reg func(w *worker.Worker)) *worker.Worker {
	e.t.Helper()
	if cfg.LeaseBucket == "" && cfg.Leases == nil {
		cfg.LeaseBucket = e.leases
	}
	w := natstest.Open(e.t, "worker", func(ctx context.Context) (*worker.Worker, error) {
		return worker.New(ctx, js, led, cfg)
	})
	if reg != nil {
		reg(w)
	}
	require.NoError(e.t, w.Start(natstest.Context(e.t, 20*time.Second)))
	return w
}

// leaseKeys lists the live keys of the env's lease bucket, the workers'
// presence leases left out (each worker holds one from Start to Close).
func (e *env) leaseKeys() []string {
	e.t.Helper()
	ctx := natstest.Context(e.t, 5*time.Second)
	kv, err := e.js.KeyValue(ctx, e.leases)
	require.NoError(e.t, err)
	lister, err := kv.ListKeys(ctx)
	require.NoError(e.t, err)
	var keys []string
	for k := range lister.Keys() {
		if !strings.Contains(k, ".p.") {
			keys = append(keys, k)
		}
	}
	return keys
}

func closeWorker(w *worker.Worker) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return w.Close(ctx)
}
