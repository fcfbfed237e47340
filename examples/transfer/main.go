// Command transfer hands a held lease from one process to another without
// ever letting it go: process 1 acquires the lease and exports it as a
// token (text, e.g. passed through a file, an environment variable or a
// message); process 2 restores the token and becomes the holder. The token
// is single-use and its secret is redacted whenever it is printed.
//
// It runs on an embedded nats-server, or against NATS_URL when set:
//
//	go run ./examples/transfer
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/transfer
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/examples/internal/exampleenv"
	"github.com/natscoord/natscoord/kvlease"
)

func main() { exampleenv.Main("transfer", run) }

// jobs is the lease family both processes declare.
var jobs = kvlease.Define[string]("transfer-example", kvlease.StringCodec{})

const key = "nightly-export"

func run(ctx context.Context, out io.Writer) error {
	dial, stop, err := exampleenv.Connector(ctx)
	if err != nil {
		return err
	}
	defer stop()

	text, fence, err := process1(ctx, dial, out)
	if err != nil {
		return err
	}
	return process2(ctx, dial, out, text, fence)
}

// process1 acquires the lease and exports it. Its manager closes without
// releasing the exported lease: the token owns it now.
func process1(ctx context.Context, dial dialer, out io.Writer) (string, uint64, error) {
	m, leases, closeFn, err := open(ctx, dial, "process-1")
	if err != nil {
		return "", 0, err
	}
	defer closeFn()
	g, ok, err := leases.Acquire(ctx, key, 30*time.Second, 5*time.Second)
	if err != nil {
		return "", 0, err
	}
	if !ok {
		return "", 0, errors.New("process-1: the lease stayed held by someone else")
	}
	fmt.Fprintf(out, "process-1 (%s) holds %s (fence %d)\n", m.Holder(), g.Key(), g.Fence())
	tok, err := leases.Export(g)
	if err != nil {
		return "", 0, err
	}
	text, err := tok.MarshalText()
	if err != nil {
		return "", 0, err
	}
	fmt.Fprintf(out, "process-1 exported it: %v (printing never shows the secret)\n", tok)
	fmt.Fprintf(out, "process-1 guard after export: %v\n", g.Err())
	return string(text), g.Fence(), nil
}

// process2 restores the token and becomes the holder; the same token can
// not be used twice.
func process2(ctx context.Context, dial dialer, out io.Writer, text string, oldFence uint64) error {
	_, leases, closeFn, err := open(ctx, dial, "process-2")
	if err != nil {
		return err
	}
	defer closeFn()
	var tok kvlease.Token[string]
	if err := tok.UnmarshalText([]byte(text)); err != nil {
		return err
	}
	g, err := leases.Restore(ctx, tok)
	if err != nil {
		return err
	}
	defer func() { _ = g.Release(context.WithoutCancel(ctx)) }()
	h, held, err := leases.Holder(ctx, key)
	if err != nil || !held {
		return fmt.Errorf("process-2: holder: held=%v err=%v", held, err)
	}
	fmt.Fprintf(out, "process-2 restored the token: the bucket now names %s as holder (fence %d > %d)\n", h.ID, g.Fence(), oldFence)
	if _, err := leases.Restore(ctx, tok); errors.Is(err, kvlease.ErrLost) {
		fmt.Fprintln(out, "restoring the same token again is refused: it was used up")
	} else {
		return fmt.Errorf("second restore: %v, want kvlease.ErrLost", err)
	}
	if err := g.Release(ctx); err != nil {
		return err
	}
	fmt.Fprintln(out, "process-2 released the lease")
	return nil
}

type dialer = exampleenv.Dialer

// open is one process: its own connection and lease manager.
func open(ctx context.Context, dial dialer, holder string) (*kvlease.Manager, kvlease.Leases[string], func(), error) {
	var zero kvlease.Leases[string]
	nc, err := dial()
	if err != nil {
		return nil, zero, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, zero, nil, err
	}
	m, err := kvlease.NewManager(ctx, js, kvlease.Config{Holder: holder})
	if err != nil {
		nc.Close()
		return nil, zero, nil, err
	}
	closeFn := func() { _ = m.Close(context.WithoutCancel(ctx)); nc.Close() }
	leases, err := jobs.Bind(m)
	if err != nil {
		closeFn()
		return nil, zero, nil, err
	}
	return m, leases, closeFn, nil
}
