package kvlease_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/kvlease"
)

// runExample starts an in-process server and a manager for an example.
func runExample(fn func(ctx context.Context, js jetstream.JetStream, m *kvlease.Manager) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedded.Start(ctx, embedded.Options{InProcessOnly: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = srv.Shutdown(ctx) }()
	js, err := srv.JetStream()
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := kvlease.NewManager(ctx, js, kvlease.Config{Holder: "worker-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = m.Close(ctx) }()
	if err := fn(ctx, js, m); err != nil {
		fmt.Println("error:", err)
	}
}

var reports = kvlease.Define[string]("reports", kvlease.StringCodec{})

func Example() {
	runExample(func(ctx context.Context, js jetstream.JetStream, m *kvlease.Manager) error {
		leases, err := reports.Bind(m)
		if err != nil {
			return err
		}
		g, ok, err := leases.TryAcquire(ctx, "2026-11", 10*time.Second)
		if err != nil || !ok {
			return fmt.Errorf("not acquired: %v", err)
		}
		fmt.Println("held:", g.Key(), g.Err() == nil)

		// A second process (here: a second manager) finds it held.
		other, err := kvlease.NewManager(ctx, js, kvlease.Config{Holder: "worker-2"})
		if err != nil {
			return err
		}
		defer func() { _ = other.Close(ctx) }()
		leases2, err := reports.Bind(other)
		if err != nil {
			return err
		}
		_, ok, err = leases2.TryAcquire(ctx, "2026-11", 10*time.Second)
		fmt.Println("second holder:", ok, err)
		h, _, err := leases2.Holder(ctx, "2026-11")
		fmt.Println("held by:", h.ID, err)

		// Release; the next holder's fence is greater.
		if err := g.Release(ctx); err != nil {
			return err
		}
		g2, ok, err := leases2.Acquire(ctx, "2026-11", 10*time.Second, time.Second)
		if err != nil || !ok {
			return fmt.Errorf("not acquired: %v", err)
		}
		fmt.Println("new fence greater:", g2.Fence() > g.Fence())
		return g2.Release(ctx)
	})
	// Output:
	// held: reports.2026-11 true
	// second holder: false <nil>
	// held by: worker-1 <nil>
	// new fence greater: true
}

func ExampleLeases_With() {
	runExample(func(ctx context.Context, _ jetstream.JetStream, m *kvlease.Manager) error {
		leases, err := reports.Bind(m)
		if err != nil {
			return err
		}
		// The manager renews every TTL/3 while fn runs; fn's context is
		// cancelled with ErrLost if the lease is lost.
		ran, err := leases.With(ctx, "nightly", 2*time.Second, 0, func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(100 * time.Millisecond): // the protected work
				return nil
			}
		})
		fmt.Println("ran:", ran, "err:", err)
		return nil
	})
	// Output:
	// ran: true err: <nil>
}

func ExampleLeases_WithProof() {
	runExample(func(ctx context.Context, _ jetstream.JetStream, m *kvlease.Manager) error {
		leases, err := reports.Bind(m)
		if err != nil {
			return err
		}
		_, err = leases.WithProof(ctx, "ledger", 2*time.Second, 0, func(ctx context.Context, p kvlease.Proof) error {
			// Lands only while the lease key is still at our revision.
			_, err := p.Put(ctx, "state.ledger", []byte("v1"))
			fmt.Println("guarded write:", err)
			return err
		})
		return err
	})
	// Output:
	// guarded write: <nil>
}

func ExampleLeases_Export() {
	runExample(func(ctx context.Context, _ jetstream.JetStream, m *kvlease.Manager) error {
		leases, err := reports.Bind(m)
		if err != nil {
			return err
		}
		g, _, err := leases.TryAcquire(ctx, "handoff", 10*time.Second)
		if err != nil {
			return err
		}
		tok, err := leases.Export(g) // g ends with ErrExported; the lease stays
		if err != nil {
			return err
		}
		fmt.Println(tok) // the secret is redacted
		text, _ := tok.MarshalText()

		// ... the text travels to another process ...
		var got kvlease.Token[string]
		if err := got.UnmarshalText(text); err != nil {
			return err
		}
		g2, err := leases.Restore(ctx, got)
		fmt.Println("restored:", err)
		_, err = leases.Restore(ctx, got)
		fmt.Println("again:", errors.Is(err, kvlease.ErrLost))
		return g2.Release(ctx)
	})
	// Output:
	// kvlease.Token{family: reports, key: reports.handoff, fence: 1, ttl: 10s, secret: REDACTED}
	// restored: <nil>
	// again: true
}

func ExampleSemaphore() {
	runExample(func(ctx context.Context, _ jetstream.JetStream, m *kvlease.Manager) error {
		downloads, err := kvlease.DefineSemaphore[string]("downloads", 2, kvlease.StringCodec{}).Bind(m)
		if err != nil {
			return err
		}
		var held []*kvlease.Guard
		for i := range 3 {
			g, ok, err := downloads.TryAcquire(ctx, "mirror-a", 10*time.Second)
			fmt.Println("slot", i, ok, err)
			if ok {
				held = append(held, g)
			}
		}
		for _, g := range held {
			if err := g.Release(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	// Output:
	// slot 0 true <nil>
	// slot 1 true <nil>
	// slot 2 false <nil>
}
