package kvlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/kvlock"

	"github.com/nats-io/nats.go/jetstream"
)

// exampleJS starts an in-process server for an example.
func exampleJS(ctx context.Context) (jetstream.JetStream, func()) {
	srv, err := embedded.Start(ctx, embedded.Options{InProcessOnly: true})
	if err != nil {
		panic(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		panic(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	return js, func() {
		nc.Close()
		_ = srv.Shutdown(context.Background())
	}
}

// Hold guards a piece of work: the context is cancelled if the lock is
// lost, and the token fences the work's writes.
func ExampleLocker_Hold() {
	ctx := context.Background()
	js, stop := exampleJS(ctx)
	defer stop()
	l, err := kvlock.New(ctx, js, kvlock.Config{TTL: 3 * time.Second})
	if err != nil {
		panic(err)
	}
	defer l.Close(ctx)

	hctx, release, err := l.Hold(ctx, kvlock.Key("conv", "42"))
	if err != nil {
		panic(err)
	}
	token, _ := kvlock.TokenFromContext(hctx)
	fmt.Println("holding, token > 0:", token > 0)
	_, held, _ := l.TryAcquire(ctx, kvlock.Key("conv", "42"))
	fmt.Println("second acquire succeeded:", held)
	release()
	fmt.Println("after release:", context.Cause(hctx))
	// Output:
	// holding, token > 0: true
	// second acquire succeeded: false
	// after release: kvlock: lock released
}

// An election: Campaign blocks until leader; Leader reports who leads.
func ExampleElection() {
	ctx := context.Background()
	js, stop := exampleJS(ctx)
	defer stop()
	l, err := kvlock.New(ctx, js, kvlock.Config{TTL: 3 * time.Second, Holder: "node-a"})
	if err != nil {
		panic(err)
	}
	defer l.Close(ctx)
	e, err := kvlock.NewElection(l, "scheduler")
	if err != nil {
		panic(err)
	}
	if err := e.Campaign(ctx, "10.0.0.1:8080"); err != nil {
		panic(err)
	}
	info, err := e.Leader(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Holder, info.Value, info.Term == e.Term())
	if err := e.Resign(ctx); err != nil {
		panic(err)
	}
	_, err = e.Leader(ctx)
	fmt.Println(err != nil)
	// Output:
	// node-a 10.0.0.1:8080 true
	// true
}

func ExampleKey() {
	fmt.Println(kvlock.Key("conv", "42"))
	fmt.Println(kvlock.Key("tenant a", "x.y"))
	fmt.Println(kvlock.ValidateKey("a b"))
	// Output:
	// conv.42
	// tenant=20a.x=2Ey
	// kvlock: invalid key: "a b" has byte ' ' at 1 (allowed: A-Z a-z 0-9 _ / = - and '.' between tokens; use Key to escape)
}
