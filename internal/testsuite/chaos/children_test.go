package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/kvlease"
)

// Child roles and their settings (environment variables set by the parent).
const (
	envDir    = "NATSCOORD_CHAOS_DIR"    // server: data directory
	envPort   = "NATSCOORD_CHAOS_PORT"   // server: client port
	envSync   = "NATSCOORD_CHAOS_SYNC"   // server: "always" for SyncAlways
	envURL    = "NATSCOORD_CHAOS_URL"    // holder: server URL
	envBucket = "NATSCOORD_CHAOS_BUCKET" // holder: lease bucket
	envTTL    = "NATSCOORD_CHAOS_TTL"    // holder: lease TTL (Go duration)
)

// crashFamily is the lease family the holder child and its successor use.
var crashFamily = kvlease.Define[string]("crash", kvlease.StringCodec{})

// childJetStream connects a child to the parent's server (envURL), with
// opts; the caller closes the connection.
func childJetStream(opts ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(os.Getenv(envURL), opts...)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// childServer runs an embedded server on a fixed data dir and port until
// ctx ends, announcing "ready <url>".
func childServer(ctx context.Context) error {
	port, err := strconv.Atoi(os.Getenv(envPort))
	if err != nil {
		return err
	}
	s, err := embedded.Start(ctx, embedded.Options{
		DataDir: os.Getenv(envDir), Port: port, SyncAlways: os.Getenv(envSync) == "always",
	})
	if err != nil {
		return err
	}
	say("ready %s", s.ClientURL())
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Shutdown(sctx)
}

// childHolder acquires the "job" lease of crashFamily, renews it
// automatically and announces "held <fence>", then holds it until killed.
func childHolder(ctx context.Context) error {
	ttl, err := time.ParseDuration(os.Getenv(envTTL))
	if err != nil {
		return err
	}
	nc, js, err := childJetStream()
	if err != nil {
		return err
	}
	defer nc.Close()
	m, err := kvlease.NewManager(ctx, js, kvlease.Config{Bucket: os.Getenv(envBucket), Holder: "child"})
	if err != nil {
		return err
	}
	defer m.Close(context.Background())
	leases, err := crashFamily.Bind(m)
	if err != nil {
		return err
	}
	g, ok, err := leases.Acquire(context.WithoutCancel(ctx), "job", ttl, 30*time.Second)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("lease not acquired")
	}
	if err := g.StartRenewing(0); err != nil {
		return err
	}
	say("held %d", g.Fence())
	<-ctx.Done()
	return nil
}
