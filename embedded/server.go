package embedded

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Server is one running embedded nats-server with JetStream enabled.
// It is safe for concurrent use.
type Server struct {
	opts    Options
	ns      *server.Server
	log     *serverLogger
	dataDir string   // the directory given to nats-server as StoreDir
	tempDir string   // removed on Shutdown when non-empty
	lock    *dirLock // the data directory's lock, released by Shutdown

	closing atomic.Bool // set by the first Shutdown call

	js   ownedJS // the connection behind JetStream()
	once sync.Once
	done chan struct{}
	err  error
}

// Start validates opts, starts a server and returns once it accepts
// connections with JetStream enabled. On any error nothing is left
// running: no listener, no goroutine, no temporary directory.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.ServerName == "" {
		opts.ServerName = "natscoord-" + nuid.Next()
	}
	dir, tempDir := opts.DataDir, ""
	if dir == "" {
		d, err := os.MkdirTemp("", "natscoord-embedded-*")
		if err != nil {
			return nil, fmt.Errorf("embedded: temp dir: %w", err)
		}
		dir, tempDir = d, d
	}
	s, err := start(ctx, opts, dir)
	if err != nil {
		if tempDir != "" {
			_ = os.RemoveAll(tempDir)
		}
		return nil, err
	}
	s.tempDir = tempDir
	return s, nil
}

// start runs one nats-server on dir; it is shared by Start and cluster
// node (re)starts.
func start(ctx context.Context, opts Options, dir string) (*Server, error) {
	so, err := opts.serverOptions(dir)
	if err != nil {
		return nil, err
	}
	lock, err := lockDataDir(dir)
	if err != nil {
		return nil, err
	}
	ns, err := server.NewServer(so)
	if err != nil {
		lock.release()
		return nil, fmt.Errorf("embedded: %w", err)
	}
	lg := &serverLogger{log: opts.Logger, name: opts.ServerName}
	// Always install the logger: Fatalf is how nats-server reports a port
	// that cannot be bound or a store that cannot be opened.
	ns.SetLoggerV2(lg, false, false, false)
	ns.Start()
	if err := waitReady(ctx, ns, lg, opts.ReadyTimeout); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		lock.release()
		return nil, err
	}
	return &Server{opts: opts, ns: ns, log: lg, dataDir: dir, lock: lock, done: make(chan struct{})}, nil
}

// waitReady polls rather than calling ns.ReadyForConnections once with the
// whole timeout: nats-server reports a listener it cannot bind or a store
// it cannot open only through Fatalf, and its own wait would sit out the
// full timeout before Start could report that message.
func waitReady(ctx context.Context, ns *server.Server, lg *serverLogger, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if msg := lg.fatalMessage(); msg != "" {
			return fmt.Errorf("%w: %s", ErrNotReady, msg)
		}
		// A 1ms budget makes ReadyForConnections a single check.
		if ns.ReadyForConnections(time.Millisecond) && ns.JetStreamEnabled() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("embedded: start: %w", ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("%w within %s", ErrNotReady, timeout)
		case <-tick.C:
		}
	}
}

// ClientURL returns the nats:// URL clients use to connect. It is empty for
// an InProcessOnly server.
func (s *Server) ClientURL() string {
	if s.opts.InProcessOnly {
		return ""
	}
	return s.ns.ClientURL()
}

// Name returns the server name.
func (s *Server) Name() string { return s.opts.ServerName }

// DataDir returns the data directory in use: Options.DataDir, or the
// temporary directory Start created. (nats-server keeps its files in a
// "jetstream" subdirectory of it.)
func (s *Server) DataDir() string { return s.dataDir }

// NATS returns the underlying nats-server for advanced use (monitoring,
// raft inspection). Callers must not shut it down directly.
func (s *Server) NATS() *server.Server { return s.ns }

// Connect opens a new in-process client connection. It adds the
// configured credentials (User/Password or Token) and the CA file, so
// callers only pass extra options. The caller owns and closes the
// connection.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	if s.closing.Load() {
		return nil, ErrShutdown
	}
	base := append(clientOptions(s.opts), nats.InProcessServer(s.ns))
	nc, err := nats.Connect("", append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("embedded: connect: %w", err)
	}
	return nc, nil
}

// JetStream returns a JetStream handle on a connection owned by the server
// (opened on first use with the configured credentials, closed by
// Shutdown).
func (s *Server) JetStream() (jetstream.JetStream, error) {
	if s.closing.Load() {
		return nil, ErrShutdown
	}
	return s.js.get(func() (*nats.Conn, error) { return s.Connect() })
}

// Done is closed once Shutdown has stopped the server (and removed its
// temporary data directory).
func (s *Server) Done() <-chan struct{} { return s.done }

// Shutdown stops the server and waits until it has stopped, or until ctx
// ends (the shutdown still completes in the background; Done reports
// it). From the first call on, Connect and JetStream return ErrShutdown.
// It closes the connection behind JetStream, closes every client
// connection, flushes and closes JetStream's files, and removes the
// temporary data directory if Start created one. Calling it again waits
// for the same shutdown and returns its result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.once.Do(func() {
		s.closing.Store(true)
		go func() {
			s.js.close()
			s.ns.Shutdown()
			s.ns.WaitForShutdown()
			s.lock.release()
			if s.tempDir != "" {
				if err := os.RemoveAll(s.tempDir); err != nil {
					s.err = fmt.Errorf("embedded: remove temp dir: %w", err)
				}
			}
			close(s.done)
		}()
	})
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return fmt.Errorf("embedded: shutdown still in progress: %w", ctx.Err())
	}
}
