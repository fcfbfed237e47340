package natstest

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// DelayProxy is a loopback TCP proxy in front of a server that can hold
// back what the server sends to the client by a delay (in order, nothing
// dropped). With a delay longer than a request's deadline, the request
// reaches the server and is processed while its answer arrives too late:
// the "outcome unknown" case that code must settle by reading.
type DelayProxy struct {
	ln    net.Listener
	to    string
	delay atomic.Int64 // nanoseconds, applied to server->client bytes
	// read counts the server->client bytes the proxy has read, held back
	// or not: a test can tell that the server has sent an answer that a
	// Stall still holds.
	read atomic.Int64

	mu      sync.Mutex
	conns   []net.Conn
	cut     bool          // Cut: connections are closed, new ones refused
	resume  chan struct{} // non-nil while stalled; closed by Stall(false) and close
	closing chan struct{}
	wg      sync.WaitGroup
}

// Stall holds back every server->client byte (the connection stays open,
// requests still reach the server, nothing is answered) until Stall(false)
// or the proxy closes: a stalled connection, as a hung server, a full
// socket buffer or a silent network path leaves it.
func (p *DelayProxy) Stall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.resume == nil:
		p.resume = make(chan struct{})
	case !on && p.resume != nil:
		close(p.resume)
		p.resume = nil
	}
}

// Cut(true) closes every connection through the proxy and closes each new
// one at once until Cut(false): to a client, the network gone, so it
// reconnects (nats.MaxReconnects(-1)) once the cut ends.
func (p *DelayProxy) Cut(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = on
	if on {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}

// waitUnstalled blocks while the proxy is stalled; false means it closed.
func (p *DelayProxy) waitUnstalled() bool {
	p.mu.Lock()
	r := p.resume
	p.mu.Unlock()
	if r == nil {
		return true
	}
	select {
	case <-r:
		return true
	case <-p.closing:
		return false
	}
}

// NewDelayProxy starts a proxy to the server at url (nats://host:port),
// stopped by t.Cleanup.
func NewDelayProxy(t testing.TB, url string) *DelayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &DelayProxy{ln: ln, to: strings.TrimPrefix(url, "nats://"), closing: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// ServerBytes is how many bytes the servers have sent through the proxy
// so far, those a Stall holds back included.
func (p *DelayProxy) ServerBytes() int64 { return p.read.Load() }

// URL is the address clients connect to.
func (p *DelayProxy) URL() string { return "nats://" + p.ln.Addr().String() }

// SetDelay sets the delay of server->client bytes read from now on.
func (p *DelayProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

func (p *DelayProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			continue
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(s, c)
			_ = s.Close()
		}()
		go func() {
			defer p.wg.Done()
			p.delayed(c, s)
			_ = c.Close()
		}()
	}
}

// delayed copies src to dst, each chunk no earlier than its arrival plus
// the delay at arrival, in order.
func (p *DelayProxy) delayed(dst, src net.Conn) {
	type chunk struct {
		due  time.Time
		data []byte
	}
	q := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ch := range q {
			if d := time.Until(ch.due); d > 0 {
				t := time.NewTimer(d)
				<-t.C
			}
			if !p.waitUnstalled() {
				for range q {
				}
				return
			}
			if _, err := dst.Write(ch.data); err != nil {
				for range q { // drain: the reader stops when src closes
				}
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.read.Add(int64(n))
			q <- chunk{due: time.Now().Add(time.Duration(p.delay.Load())), data: append([]byte(nil), buf[:n]...)}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
}

func (p *DelayProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	close(p.closing)
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// ThroughProxy connects to n through a new DelayProxy and returns the
// proxy and a JetStream handle on that connection (jsOpts apply to the
// handle); everything closes on t.Cleanup. The proxy's Stall and SetDelay
// then act on that connection alone.
func ThroughProxy(t testing.TB, n *Node, jsOpts ...jetstream.JetStreamOpt) (*DelayProxy, jetstream.JetStream) {
	t.Helper()
	p := NewDelayProxy(t, n.Server.ClientURL())
	nc, err := nats.Connect(p.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jsOpts...)
	require.NoError(t, err)
	return p, js
}
