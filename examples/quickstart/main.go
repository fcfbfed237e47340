// Command quickstart is the smallest tour of kvlock: two services share one
// lock. The first holds it with Hold (a watchdog renews it) and writes to a
// resource with the lock's fencing token; the second finds the lock held,
// waits for it, and gets a larger token, so the resource can refuse anything
// the first might still send late.
//
// It runs on an embedded nats-server, or against NATS_URL when set:
//
//	go run ./examples/quickstart
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/examples/internal/exampleenv"
	"github.com/natscoord/natscoord/kvlock"
)

func main() { exampleenv.Main("quickstart", run) }

// fencedStore stands for any resource guarded by the lock: it remembers the
// highest token it accepted and refuses writes carrying a smaller one.
type fencedStore struct {
	mu      sync.Mutex
	highest uint64
	value   string
}

var errStaleToken = errors.New("stale fencing token")

func (s *fencedStore) write(token uint64, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("%w: %d < %d", errStaleToken, token, s.highest)
	}
	s.highest, s.value = token, v
	return nil
}

func run(ctx context.Context, out io.Writer) error {
	dial, stop, err := exampleenv.Connector(ctx)
	if err != nil {
		return err
	}
	defer stop()

	// Two services, each with its own connection and Locker.
	a, closeA, err := newLocker(ctx, dial, "service-a")
	if err != nil {
		return err
	}
	defer closeA()
	b, closeB, err := newLocker(ctx, dial, "service-b")
	if err != nil {
		return err
	}
	defer closeB()

	const key = "report.daily"
	store := &fencedStore{}

	// service-a holds the lock; its context ends if the lock is lost.
	held, release, err := a.Hold(ctx, key)
	if err != nil {
		return err
	}
	tokenA, _ := kvlock.TokenFromContext(held)
	if err := store.write(tokenA, "written by service-a"); err != nil {
		return err
	}
	fmt.Fprintf(out, "service-a holds %s (token %d) and wrote to the store\n", key, tokenA)

	// service-b tries once: the lock is held.
	if _, ok, err := b.TryAcquire(ctx, key); err != nil || ok {
		return fmt.Errorf("service-b TryAcquire: ok=%v err=%v, want the lock held", ok, err)
	}
	fmt.Fprintln(out, "service-b: the lock is held, waiting for it")

	// service-b waits (woken by the KV watch when service-a releases).
	got := make(chan *kvlock.Lock, 1)
	errc := make(chan error, 1)
	go func() {
		lk, err := b.Acquire(ctx, key)
		if err != nil {
			errc <- err
			return
		}
		got <- lk
	}()
	release()
	fmt.Fprintln(out, "service-a released the lock")
	var lk *kvlock.Lock
	select {
	case lk = <-got:
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { _ = lk.Release(context.WithoutCancel(ctx)) }()
	fmt.Fprintf(out, "service-b holds %s (token %d > %d)\n", key, lk.Token(), tokenA)
	if err := store.write(lk.Token(), "written by service-b"); err != nil {
		return err
	}

	// A late write from service-a, still carrying its old token, is refused.
	if err := store.write(tokenA, "late write by service-a"); errors.Is(err, errStaleToken) {
		fmt.Fprintf(out, "a late write with token %d was refused: %v\n", tokenA, err)
	} else {
		return fmt.Errorf("late write: %v, want it refused", err)
	}
	fmt.Fprintf(out, "store holds %q\n", store.value)
	return nil
}

func newLocker(ctx context.Context, dial func() (*nats.Conn, error), holder string) (*kvlock.Locker, func(), error) {
	nc, err := dial()
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	l, err := kvlock.New(ctx, js, kvlock.Config{Name: "quickstart", Holder: holder, TTL: 5 * time.Second})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return l, func() { _ = l.Close(context.WithoutCancel(ctx)); nc.Close() }, nil
}
