package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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
// global account), or -1 when no running node leads it. During an
// election it may briefly report the old leader.
func (c *Cluster) StreamLeader(stream string) int {
	i, _ := c.streamLeader(stream)
	return i
}

func (c *Cluster) streamLeader(stream string) (int, *Server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.nodes {
		if s != nil && s.ns.JetStreamIsStreamLeader(jsAccount, stream) {
			return i, s
		}
	}
	return -1, nil
}

// KVStreamName returns the stream name behind a KV bucket.
func KVStreamName(bucket string) string { return "KV_" + bucket }

// jsAccount is the account of clients that authenticate without accounts:
// nats-server's global account.
const jsAccount = "$G"

// StepDownStream asks the current leader of stream to step down and waits
// (bounded by ctx) until another node leads it. It returns the new
// leader's index, or ErrNoLeader when no running node leads stream.
func (c *Cluster) StepDownStream(ctx context.Context, stream string) (int, error) {
	old, s := c.streamLeader(stream)
	if s == nil {
		return -1, fmt.Errorf("%w: stream %q", ErrNoLeader, stream)
	}
	if err := s.ns.JetStreamStepdownStream(jsAccount, stream); err != nil {
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

// Connect opens a new network connection to the running nodes with the
// configured credentials; it reconnects to whichever node runs. The caller
// owns and closes it.
func (c *Cluster) Connect(opts ...nats.Option) (*nats.Conn, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed || len(c.Running()) == 0 {
		return nil, ErrShutdown
	}
	return connectURLs(c.ClientURLs(), c.base, opts...)
}

// JetStream returns a JetStream handle on a connection owned by the
// cluster (opened on first use, closed by Shutdown), as Server.JetStream
// does for one node.
func (c *Cluster) JetStream() (jetstream.JetStream, error) {
	return c.js.get(func() (*nats.Conn, error) { return c.Connect() })
}
