// Package exampleenv gives the runnable examples their NATS: the server at
// NATS_URL when it is set, else an in-process embedded server, so every
// example runs with `go run` on a fresh machine and unchanged against a
// real deployment.
package exampleenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/natscoord/natscoord/embedded"
)

// Dialer opens a new client connection: one per simulated process.
type Dialer func() (*nats.Conn, error)

// Connector returns a Dialer for NATS_URL when it is set, else for an
// embedded in-process server started here, and a stop function that shuts
// that server down (a no-op for NATS_URL).
func Connector(ctx context.Context) (Dialer, func(), error) {
	if url := os.Getenv("NATS_URL"); url != "" {
		return func() (*nats.Conn, error) { return nats.Connect(url) }, func() {}, nil
	}
	srv, err := embedded.Start(ctx, embedded.Options{InProcessOnly: true})
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return func() (*nats.Conn, error) { return srv.Connect() }, stop, nil
}

// Main runs an example's run function with a minute's bound, writing to
// stdout, and exits 1 with the error (prefixed by name) when it fails.
func Main(name string, run func(ctx context.Context, out io.Writer) error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err := run(ctx, os.Stdout)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
