package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/nats-io/nuid"
)

// clusterNode carries the route settings of one cluster member.
type clusterNode struct {
	name      string
	port      int
	routes    []*url.URL
	advertise string // route address told to peers; empty: the listener's
}

// Cluster is n JetStream nodes in this process, routed over loopback. Its
// nodes can be stopped and restarted one by one (keeping their data
// directories), which is what failover tests need.
type Cluster struct {
	name    string
	base    Options
	tempDir string

	sink *routeSink // set when ClusterOptions.RouteAddr is

	mu     sync.Mutex
	nodes  []*Server // nil while a node is stopped
	opts   []Options
	closed bool // set by Shutdown; RestartNode then refuses

	js ownedJS // the connection behind JetStream

	done     chan struct{} // closed when Shutdown has finished
	doneOnce sync.Once
}

// StartCluster starts n nodes (n >= 2) with opts as the template for each
// (Host, Port, ServerName and InProcessOnly are chosen per node; DataDir,
// when set, gets one subdirectory per node) and returns once a JetStream
// meta leader exists.
func StartCluster(ctx context.Context, n int, opts Options) (*Cluster, error) {
	return StartClusterWith(ctx, n, opts, ClusterOptions{})
}

// StartClusterWith is StartCluster with the routes wired as copts says
// (for example through proxies a test controls).
func StartClusterWith(ctx context.Context, n int, opts Options, copts ClusterOptions) (*Cluster, error) {
	if n < 2 {
		// One node routed to itself would wait forever for meta-group
		// peers; a single node is what Start is for.
		return nil, invalid("cluster size %d: a cluster needs at least 2 nodes (3 for R3 streams); use Start for one", n)
	}
	if opts.InProcessOnly {
		return nil, invalid("a cluster needs listeners; InProcessOnly is not allowed")
	}
	opts.Port, opts.ServerName = 0, ""
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	c := &Cluster{name: "natscoord-" + nuid.Next()[:8], base: opts, done: make(chan struct{})}
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
	if copts.RouteAddr != nil {
		if c.sink, err = newRouteSink(); err != nil {
			c.cleanup()
			return nil, err
		}
	}
	for i := range n {
		routes, err := copts.routeURLs(i, ports)
		if err != nil {
			c.cleanup()
			return nil, err
		}
		o := opts
		o.ServerName = fmt.Sprintf("%s-n%d", c.name, i+1)
		o.DataDir = filepath.Join(root, fmt.Sprintf("n%d", i+1))
		o.cluster = &clusterNode{name: c.name, port: ports[i], routes: routes}
		if c.sink != nil {
			o.cluster.advertise = c.sink.addr()
		}
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

// Node returns node i (0-based), or nil while it is stopped or when i is
// out of range.
func (c *Cluster) Node(i int) *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.nodes) {
		return nil
	}
	return c.nodes[i]
}

func (c *Cluster) checkIndex(i int) error {
	if i < 0 || i >= len(c.opts) {
		return fmt.Errorf("embedded: node %d out of range [0, %d)", i, len(c.opts))
	}
	return nil
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

// StopNode shuts node i down, keeping its data directory. Stopping a
// stopped node does nothing.
func (c *Cluster) StopNode(ctx context.Context, i int) error {
	if err := c.checkIndex(i); err != nil {
		return err
	}
	c.mu.Lock()
	s := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Shutdown(ctx)
}

// RestartNode starts the stopped node i again on its data directory and
// route port. It returns once the node accepts connections; the node then
// catches up with its streams in the background (see
// Server.StreamReplica to wait for that).
func (c *Cluster) RestartNode(ctx context.Context, i int) error {
	if err := c.checkIndex(i); err != nil {
		return err
	}
	c.mu.Lock()
	running, closed := c.nodes[i] != nil, c.closed
	c.mu.Unlock()
	if closed {
		return ErrShutdown
	}
	if running {
		return fmt.Errorf("embedded: node %d is running", i)
	}
	s, err := c.startNode(ctx, i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed || c.nodes[i] != nil {
		// Shutdown or a concurrent RestartNode won the race.
		c.mu.Unlock()
		return errors.Join(fmt.Errorf("embedded: node %d restarted concurrently or cluster shut down", i), s.Shutdown(ctx))
	}
	c.nodes[i] = s
	c.mu.Unlock()
	return nil
}

// Shutdown stops every running node (concurrently) and removes the
// temporary data directory, if StartCluster created one. Afterwards
// RestartNode returns ErrShutdown; calling Shutdown again does nothing.
func (c *Cluster) Shutdown(ctx context.Context) error {
	c.js.close()
	c.mu.Lock()
	nodes := c.nodes
	c.nodes = make([]*Server, len(c.opts))
	c.closed = true
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
	// Done follows the nodes' own Done: a node whose Shutdown returned
	// early (ctx ended) still stops in the background, and only then is the
	// cluster done and its temporary directory removed.
	finish := func() {
		for _, s := range nodes {
			if s != nil {
				<-s.Done()
			}
		}
		c.cleanup()
		close(c.done)
	}
	c.doneOnce.Do(func() {
		if first == nil {
			finish() // every node has stopped: nothing to wait for
		} else {
			go finish()
		}
	})
	return first
}

// Done is closed once Shutdown has stopped every node (and removed the
// temporary data directory), as Server.Done is for one node.
func (c *Cluster) Done() <-chan struct{} { return c.done }

func (c *Cluster) cleanup() {
	c.sink.close()
	if c.tempDir != "" {
		_ = os.RemoveAll(c.tempDir)
	}
}
