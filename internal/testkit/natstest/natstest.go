// Package natstest is the NATS kit every natscoord test starts from: real
// embedded nats-servers (a single node or a loopback cluster), JetStream
// handles, bounded waits and goroutine-leak checks. Nothing in natscoord
// mocks NATS. Kits for one package's tests build on it (dashtest for the
// dashboard).
//
// It is imported by _test.go files only.
package natstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/retry"
)

// Node is a running single server with a client connection and JetStream
// handle, all closed by t.Cleanup.
type Node struct {
	Server *embedded.Server
	NC     *nats.Conn
	JS     jetstream.JetStream
}

// WithServer starts a single-node embedded server for t with a temporary
// data dir. Options may adjust the embedded options.
func WithServer(t testing.TB, opts ...func(*embedded.Options)) *Node {
	t.Helper()
	o := embedded.Options{DataDir: t.TempDir()}
	for _, f := range opts {
		f(&o)
	}
	s, err := embedded.Start(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	return &Node{Server: s, NC: Connect(t, s), JS: JetStream(t, connectFor(t, s))}
}

// Connect opens an in-process client connection to s, closed by t.Cleanup.
func Connect(t testing.TB, s *embedded.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	return connectFor(t, s, opts...)
}

func connectFor(t testing.TB, s *embedded.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := s.Connect(opts...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// JetStream returns a JetStream handle on nc.
func JetStream(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

// NewJS opens a fresh connection to the node (a second "process") and
// returns its JetStream handle; the connection closes on t.Cleanup.
func (n *Node) NewJS(t testing.TB) jetstream.JetStream {
	t.Helper()
	return JetStream(t, connectFor(t, n.Server))
}

// Cluster is a running loopback cluster with a JetStream handle connected
// to all of its nodes.
type Cluster struct {
	*embedded.Cluster
	JS jetstream.JetStream
}

// WithCluster starts an n-node cluster for t, waits until it accepts
// replicated streams and shuts everything down on t.Cleanup.
//
// Starting is retried (three attempts, fresh ports and directories each
// time): route ports are reserved before the nodes start, so another test
// binary running in parallel can take one in between, and a starved
// machine can miss the meta-leader deadline. Neither says anything about
// the code under test.
func WithCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c, _ := withCluster(t, n, false)
	return c
}

// PartitionCluster is a Cluster whose nodes reach each other only through
// Net, so a test can cut route traffic between chosen nodes while they run.
type PartitionCluster struct {
	*Cluster
	Net *RouteNet
}

// WithPartitionCluster is WithCluster with every route through a RouteNet
// (closed on t.Cleanup after the nodes stopped). opts adjust each node's
// options (for example SyncAlways).
func WithPartitionCluster(t testing.TB, n int, opts ...func(*embedded.Options)) *PartitionCluster {
	t.Helper()
	c, rn := withCluster(t, n, true, opts...)
	return &PartitionCluster{Cluster: c, Net: rn}
}

func withCluster(t testing.TB, n int, routeNet bool, opts ...func(*embedded.Options)) (*Cluster, *RouteNet) {
	t.Helper()
	var (
		c    *embedded.Cluster
		rn   *RouteNet
		js   jetstream.JetStream
		errs []error
	)
	o := embedded.Options{ReadyTimeout: 20 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	// Up to 3 starts, one after the other (the one retry primitive,
	// internal/retry), each in a new data directory.
	_ = retry.Policy{Tries: 3}.Do(context.Background(), func(context.Context) error {
		var copts embedded.ClusterOptions
		if routeNet {
			rn = NewRouteNet(n)
			copts.RouteAddr = rn.RouteAddr
		}
		o.DataDir = t.TempDir()
		var err error
		c, js, err = startCluster(n, o, copts)
		if err != nil {
			errs = append(errs, err)
			if rn != nil {
				rn.Close()
			}
		}
		return err
	})
	require.NotNil(t, c, "start a %d-node cluster: %v", n, errs)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err := c.Shutdown(ctx)
		if rn != nil {
			rn.Close()
		}
		require.NoError(t, err)
	})
	return &Cluster{Cluster: c, JS: js}, rn
}

// startCluster starts a cluster and waits until an R-n stream can be
// created (the meta leader knows its peers), so tests need no retry loop
// around their first bucket.
func startCluster(n int, o embedded.Options, copts embedded.ClusterOptions) (*embedded.Cluster, jetstream.JetStream, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	c, err := embedded.StartClusterWith(ctx, n, o, copts)
	if err != nil {
		return nil, nil, err
	}
	js, err := c.JetStream()
	if err == nil {
		err = probeReplicated(ctx, js, n)
	}
	if err != nil {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		_ = c.Shutdown(sctx)
		return nil, nil, err
	}
	return c, js, nil
}

func probeReplicated(ctx context.Context, js jetstream.JetStream, n int) error {
	cfg := jetstream.StreamConfig{Name: "NATSTEST_PROBE", Subjects: []string{"natstest.probe"}, Replicas: n}
	// Until ctx ends, 50 ms apart (the one retry primitive).
	err := retry.Policy{Pause: 50 * time.Millisecond, MaxPause: 50 * time.Millisecond}.Do(ctx, func(ctx context.Context) error {
		_, err := js.CreateStream(ctx, cfg)
		return err
	})
	if err != nil {
		return errors.Join(err, ctx.Err())
	}
	return js.DeleteStream(ctx, cfg.Name)
}

// NewJS opens a new network connection to the cluster's running nodes;
// it reconnects to other nodes when one stops.
func (c *Cluster) NewJS(t testing.TB) jetstream.JetStream {
	t.Helper()
	return NewClusterJS(t, c.Cluster)
}

// NewClusterJS is NewJS for a bare embedded.Cluster.
func NewClusterJS(t testing.TB, c *embedded.Cluster) jetstream.JetStream {
	t.Helper()
	nc, err := c.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

// Context returns a context cancelled on t.Cleanup and after d.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Eventually waits up to timeout for cond to hold, checking every tick.
// It is the bounded wait for conditions that have no event to wait on
// (for example "the server-side TTL has expired"); never use time.Sleep
// to wait for a condition.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msgAndArgs ...any) {
	t.Helper()
	require.Eventually(t, cond, timeout, 5*time.Millisecond, msgAndArgs...)
}

// Recv waits up to timeout for a value on ch.
func Recv[T any](t testing.TB, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		require.True(t, ok, "%s: channel closed", what)
		return v
	case <-time.After(timeout):
		require.FailNow(t, "timed out waiting for "+what)
	}
	var zero T
	return zero
}

// WaitClosed waits up to timeout for ch to be closed.
func WaitClosed(t testing.TB, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		require.FailNow(t, "timed out waiting for "+what)
	}
}
