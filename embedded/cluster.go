package embedded

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// clusterNode carries the route settings of one cluster member.
type clusterNode struct {
	name   string
	port   int
	routes []*url.URL
}

// Cluster is n JetStream nodes in this process, routed over loopback. Its
// nodes can be stopped and restarted one by one (keeping their data
// directories), which is what failover tests need.
type Cluster struct {
	name    string
	base    Options
	tempDir string

	mu    sync.Mutex
	nodes []*Server // nil while a node is stopped
	opts  []Options
}

// StartCluster starts n nodes (n >= 1) with opts as the template for each
// (Host, Port, ServerName and InProcessOnly are chosen per node; DataDir,
// when set, gets one subdirectory per node) and returns once a JetStream
// meta leader exists.
func StartCluster(ctx context.Context, n int, opts Options) (*Cluster, error) {
	if n < 1 {
		return nil, invalid("cluster size %d", n)
	}
	if opts.InProcessOnly {
		return nil, invalid("a cluster needs listeners; InProcessOnly is not allowed")
	}
	opts.Port, opts.ServerName = 0, ""
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	c := &Cluster{name: "natscoord-" + nuid.Next()[:8], base: opts}
	root := opts.DataDir
	if root == "" {
		d, err := os.MkdirTemp("", "natscoord-cluster-*")
		if err != nil {
			return nil, fmt.Errorf("embedded: temp dir: %w", err)
		}
		root, c.tempDir = d, d
	}
	ports, err := freePorts(n)
	if err != nil {
		c.cleanup()
		return nil, err
	}
	routes := make([]*url.URL, n)
	for i, p := range ports {
		routes[i] = &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)}
	}
	for i := range n {
		o := opts
		o.ServerName = fmt.Sprintf("%s-n%d", c.name, i+1)
		o.DataDir = filepath.Join(root, fmt.Sprintf("n%d", i+1))
		o.cluster = &clusterNode{name: c.name, port: ports[i], routes: routes}
		c.opts = append(c.opts, o)
	}
	// Start all nodes concurrently: each waits for its routes.
	c.nodes = make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c.nodes[i], errs[i] = c.startNode(ctx, i)
		})
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			_ = c.Shutdown(context.Background())
			return nil, e
		}
	}
	if err := c.WaitMetaLeader(ctx); err != nil {
		_ = c.Shutdown(context.Background())
		return nil, err
	}
	return c, nil
}

func (c *Cluster) startNode(ctx context.Context, i int) (*Server, error) {
	o := c.opts[i]
	if err := o.validate(); err != nil {
		return nil, err
	}
	return start(ctx, o, o.DataDir)
}

// freePorts reserves n distinct loopback ports and releases them, so that
// routes can be configured before the nodes start.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("embedded: reserve route port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Size returns the number of nodes, running or stopped.
func (c *Cluster) Size() int { return len(c.opts) }

// Node returns node i, or nil while it is stopped.
func (c *Cluster) Node(i int) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Running returns the nodes that are currently running.
func (c *Cluster) Running() []*Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Server
	for _, s := range c.nodes {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// ClientURLs returns the client URLs of the running nodes, comma
// separated, as nats.Connect accepts them.
func (c *Cluster) ClientURLs() string {
	var out string
	for _, s := range c.Running() {
		if out != "" {
			out += ","
		}
		out += s.ClientURL()
	}
	return out
}

// StopNode shuts node i down, keeping its data directory.
func (c *Cluster) StopNode(ctx context.Context, i int) error {
	c.mu.Lock()
	s := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Shutdown(ctx)
}

// RestartNode starts node i again on its data directory and route port.
func (c *Cluster) RestartNode(ctx context.Context, i int) error {
	c.mu.Lock()
	running := c.nodes[i] != nil
	c.mu.Unlock()
	if running {
		return fmt.Errorf("embedded: node %d is running", i)
	}
	s, err := c.startNode(ctx, i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.nodes[i] = s
	c.mu.Unlock()
	return nil
}

// WaitMetaLeader waits until a running node reports a JetStream meta
// leader, bounded by the template's ReadyTimeout (default 10s) and ctx.
func (c *Cluster) WaitMetaLeader(ctx context.Context) error {
	timeout := c.base.ReadyTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, s := range c.Running() {
			if s.ns.JetStreamIsLeader() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNoMetaLeader, ctx.Err())
		case <-tick.C:
		}
	}
}

// StreamLeader returns the index of the node leading stream (in the
// global account), or -1 when no running node leads it.
func (c *Cluster) StreamLeader(stream string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.nodes {
		if s != nil && s.ns.JetStreamIsStreamLeader(jsAccount, stream) {
			return i
		}
	}
	return -1
}

// KVStreamName returns the stream name behind a KV bucket.
func KVStreamName(bucket string) string { return "KV_" + bucket }

const jsAccount = "$G"

// StepDownStream asks the current leader of stream to step down and waits
// (bounded by ctx) until another node leads it. It returns the new
// leader's index.
func (c *Cluster) StepDownStream(ctx context.Context, stream string) (int, error) {
	old := c.StreamLeader(stream)
	if old < 0 {
		return -1, fmt.Errorf("embedded: stream %q has no leader", stream)
	}
	if err := c.Node(old).ns.JetStreamStepdownStream(jsAccount, stream); err != nil {
		return -1, fmt.Errorf("embedded: step down %q: %w", stream, err)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if l := c.StreamLeader(stream); l >= 0 && l != old {
			return l, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("embedded: no new leader for %q: %w", stream, ctx.Err())
		case <-tick.C:
		}
	}
}

// JetStream connects to the running nodes and returns a JetStream handle
// plus a close function for its connection.
func (c *Cluster) JetStream() (jetstream.JetStream, func(), error) {
	run := c.Running()
	if len(run) == 0 {
		return nil, nil, ErrShutdown
	}
	nc, err := connectURLs(c.ClientURLs(), c.base)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("embedded: jetstream: %w", err)
	}
	return js, nc.Close, nil
}

// Shutdown stops every running node and removes the temporary data
// directory, if StartCluster created one.
func (c *Cluster) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	nodes := c.nodes
	c.nodes = make([]*Server, len(c.opts))
	c.mu.Unlock()
	var first error
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, s := range nodes {
		if s == nil {
			continue
		}
		wg.Go(func() {
			if err := s.Shutdown(ctx); err != nil {
				emu.Lock()
				if first == nil {
					first = err
				}
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	c.cleanup()
	return first
}

func (c *Cluster) cleanup() {
	if c.tempDir != "" {
		_ = os.RemoveAll(c.tempDir)
	}
}
