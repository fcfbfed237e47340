// Command natscoord operates natscoord's leases, locks and ledgers on a
// NATS server, runs an embedded server for local development, and runs the
// demo (the main job) on one.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	maybeSupervise() // natscoord work's supervisor of one command
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
