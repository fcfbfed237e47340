package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// fault names one kind of injected fault.
type fault string

const (
	faultNodeRestart  fault = "node stop+restart"
	faultStepDown     fault = "stream leader step-down"
	faultPauseHolder  fault = "holder paused past its TTL"
	faultConnCut      fault = "client connection cut"
	faultFullRestart  fault = "full-cluster restart"
	faultPauseWorker  fault = "ledger worker paused past its lease"
	faultStepDownTask fault = "ledger stream leader step-down"
)

// chaosCluster is a 3-node cluster plus the client connections the fault
// injector may cut.
type chaosCluster struct {
	t  *testing.T
	c  *natstest.Cluster
	mu sync.Mutex
	// conns are the live client connections by client name.
	conns  map[string]jetstream.JetStream
	faults map[fault]int
	// nodeOf, when set, pins client name to one node: its connection
	// starts there (it may fail over when that node stops).
	nodeOf func(name string) int
}

func newChaosCluster(t *testing.T) *chaosCluster {
	t.Helper()
	return &chaosCluster{t: t, c: natstest.WithCluster(t, 3), conns: map[string]jetstream.JetStream{}, faults: map[fault]int{}}
}

// connect opens a new connection for client name (replacing its previous
// one in the cut list) and returns it with its close function.
func (cc *chaosCluster) connect(name string) (jetstream.JetStream, func(), error) {
	var (
		js      jetstream.JetStream
		closeFn func()
		err     error
	)
	if cc.nodeOf != nil {
		js, closeFn, err = cc.connectNode(cc.nodeOf(name))
	} else {
		var nc *nats.Conn
		if nc, err = cc.c.Cluster.Connect(); err == nil {
			if js, err = jetstream.New(nc); err != nil {
				nc.Close()
			}
			closeFn = nc.Close
		}
	}
	if err != nil {
		return nil, nil, err
	}
	cc.mu.Lock()
	cc.conns[name] = js
	cc.mu.Unlock()
	return js, closeFn, nil
}

// connectNode connects to node i (all running nodes while it is stopped);
// the client reconnects every 200 ms, to the servers it has learnt of too.
func (cc *chaosCluster) connectNode(i int) (jetstream.JetStream, func(), error) {
	url := cc.c.ClientURLs()
	if s := cc.c.Node(i); s != nil {
		url = s.ClientURL()
	}
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(200*time.Millisecond), nats.Name(fmt.Sprintf("chaos-n%d", i)))
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return js, nc.Close, nil
}

// cut closes the connection of a random client whose name has prefix.
func (cc *chaosCluster) cut(prefix string) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	var names []string
	for n, js := range cc.conns {
		if len(n) >= len(prefix) && n[:len(prefix)] == prefix && !js.Conn().IsClosed() {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return false
	}
	cc.conns[names[rand.IntN(len(names))]].Conn().Close()
	return true
}

func (cc *chaosCluster) count(f fault) {
	cc.mu.Lock()
	cc.faults[f]++
	cc.mu.Unlock()
}

// faultSummary returns the fault counts as text and their total.
func (cc *chaosCluster) faultSummary() (string, int) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	s, total := "", 0
	for _, f := range []fault{faultNodeRestart, faultStepDown, faultStepDownTask, faultPauseHolder, faultPauseWorker, faultConnCut, faultFullRestart} {
		if n := cc.faults[f]; n > 0 {
			s += fmt.Sprintf("%s %d, ", f, n)
			total += n
		}
	}
	if s != "" {
		s = s[:len(s)-2]
	}
	return s, total
}

// restartNode stops node i, keeps it down for down, restarts it and waits
// until its replicas of streams have caught up with their leaders.
func (cc *chaosCluster) restartNode(ctx context.Context, i int, down time.Duration, streams ...string) {
	t := cc.t
	require.NoError(t, cc.c.StopNode(ctx, i))
	cc.pause(ctx, down)
	require.NoError(t, cc.c.RestartNode(ctx, i))
	cc.waitCaughtUp(ctx, []int{i}, streams...)
	cc.count(faultNodeRestart)
}

// fullRestart stops every node, restarts them all and waits until the
// streams have leaders and every replica caught up; clients then need new
// connections (the nodes listen on new client ports), so every client
// connection is cut.
func (cc *chaosCluster) fullRestart(ctx context.Context, streams ...string) {
	t := cc.t
	n := cc.c.Size()
	for i := range n {
		require.NoError(t, cc.c.StopNode(ctx, i))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = cc.c.RestartNode(ctx, i) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, cc.c.WaitMetaLeader(ctx))
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	cc.waitCaughtUp(ctx, all, streams...)
	cc.mu.Lock()
	for _, js := range cc.conns {
		js.Conn().Close()
	}
	cc.mu.Unlock()
	cc.count(faultFullRestart)
}

// waitCaughtUp waits until each stream has a leader and nodes' replicas
// hold the leader's last sequence.
func (cc *chaosCluster) waitCaughtUp(ctx context.Context, nodes []int, streams ...string) {
	t := cc.t
	for _, st := range streams {
		natstest.Eventually(t, 60*time.Second, func() bool {
			l := cc.c.StreamLeader(st)
			if l < 0 || ctx.Err() != nil {
				return ctx.Err() != nil
			}
			lr, err := cc.c.Node(l).StreamReplica(st)
			if err != nil {
				return false
			}
			for _, i := range nodes {
				r, err := cc.c.Node(i).StreamReplica(st)
				if err != nil || r.LastSeq < lr.LastSeq {
					return false
				}
			}
			return true
		}, "replicas of %s caught up", st)
	}
}

// stepDown moves stream's leader to another node.
func (cc *chaosCluster) stepDown(ctx context.Context, stream string, f fault) {
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err := cc.c.StepDownStream(sctx, stream)
	if err != nil && ctx.Err() == nil {
		cc.t.Logf("step-down %s: %v", stream, err)
		return
	}
	cc.count(f)
}

// pause waits d or until ctx ends. It is the fault itself (a pause), not a
// wait for a condition.
func (cc *chaosCluster) pause(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// retryCreate runs create until it succeeds (an R3 bucket right after the
// cluster starts may fail while the meta leader learns its peers).
func retryCreate(t *testing.T, create func(ctx context.Context) error) {
	t.Helper()
	natstest.Eventually(t, 60*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return create(ctx) == nil
	}, "create bucket")
}

// openLedger opens a ledger without an event bus on the existing bucket,
// retrying like bindKV (a node answers a fresh R3 bucket's info only once
// it has caught up with its creation: it timed out once in CI under
// load); t.Cleanup closes it.
func openLedger(t *testing.T, js jetstream.JetStream, bucket string) *kvledger.Ledger {
	t.Helper()
	var l *kvledger.Ledger
	retryCreate(t, func(ctx context.Context) error {
		store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: bucket})
		if err != nil {
			return err
		}
		l, err = kvledger.New(store)
		return err
	})
	return l
}

// bindKV binds bucket on js, retrying like retryCreate: a node answers
// the bucket's info only once it has caught up with the meta layer's
// create, which timed out once under load on a SyncAlways cluster.
func bindKV(t *testing.T, js jetstream.JetStream, bucket string) jetstream.KeyValue {
	t.Helper()
	var kv jetstream.KeyValue
	retryCreate(t, func(ctx context.Context) (err error) {
		kv, err = js.KeyValue(ctx, bucket)
		return err
	})
	return kv
}

// streamOf is the stream behind a KV bucket.
func streamOf(bucket string) string { return embedded.KVStreamName(bucket) }

// counter is a named set of atomic counters.
type counter struct{ n atomic.Int64 }

func (c *counter) add() int64  { return c.n.Add(1) }
func (c *counter) load() int64 { return c.n.Load() }
