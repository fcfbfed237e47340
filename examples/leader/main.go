// Command leader is a small tour of kvlock's leader election: three
// candidates campaign, the first leads and fences its work with its term,
// then "crashes" (its connection to NATS closes without resigning); the
// next candidate takes over within the lock TTL, later resigns, and the
// last one takes over at once. An observer prints every leadership change,
// vacancies included.
//
// It runs on an embedded nats-server, or against NATS_URL when set:
//
//	go run ./examples/leader
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/leader
package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/natscoord/natscoord/examples/internal/exampleenv"
	"github.com/natscoord/natscoord/kvlock"
)

func main() { exampleenv.Main("leader", run) }

// syncWriter serializes lines printed from several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, format+"\n", args...)
}

type node struct {
	name string
	nc   *nats.Conn
	l    *kvlock.Locker
	e    *kvlock.Election
}

func run(ctx context.Context, w io.Writer) error {
	out := &syncWriter{w: w}
	dial, stop, err := exampleenv.Connector(ctx)
	if err != nil {
		return err
	}
	defer stop()
	// A fresh election name per run, so runs against a shared server do
	// not meet each other's leaders.
	election := "demo-" + nuid.Next()
	cfg := kvlock.Config{Name: "example", TTL: time.Second, RenewInterval: 300 * time.Millisecond, Fair: true}

	newNode := func(name string) (*node, error) {
		nc, err := dial()
		if err != nil {
			return nil, err
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return nil, err
		}
		c := cfg
		c.Holder = name
		l, err := kvlock.New(ctx, js, c)
		if err != nil {
			nc.Close()
			return nil, err
		}
		e, err := kvlock.NewElection(l, election)
		if err != nil {
			nc.Close()
			return nil, err
		}
		return &node{name: name, nc: nc, l: l, e: e}, nil
	}
	var nodes []*node
	defer func() {
		for _, n := range nodes {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = n.l.Close(cctx) // fails for the crashed node: it has no connection
			cancel()
			n.nc.Close()
		}
	}()
	for _, name := range []string{"observer", "node-1", "node-2", "node-3"} {
		n, err := newNode(name)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	obs, n1, n2, n3 := nodes[0], nodes[1], nodes[2], nodes[3]

	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	events := obs.e.Observe(octx)
	var (
		seen    sync.WaitGroup
		mu      sync.Mutex
		vacant  bool                     // the observer's latest state
		changed = make(chan struct{}, 1) // the observer reported a state
	)
	seen.Add(1)
	go func() {
		defer seen.Done()
		for ev := range events {
			if ev.Vacant {
				out.printf("observer: no leader")
			} else {
				out.printf("observer: leader %s value %q", ev.Info.Holder, ev.Info.Value)
			}
			mu.Lock()
			vacant = ev.Vacant
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}()

	if err := n1.e.Campaign(ctx, "http://node-1:8080"); err != nil {
		return err
	}
	term := n1.e.Term()
	out.printf("node-1: leading")
	// Guarded work fences its writes with the term.
	if t, ok := kvlock.TokenFromContext(n1.e.Context()); ok && t == term {
		out.printf("node-1: writing with fencing token = term")
	}

	won := make(chan *node, 2)
	for _, n := range []*node{n2, n3} {
		go func() {
			if err := n.e.Campaign(ctx, "http://"+n.name+":8080"); err != nil {
				out.printf("%s: campaign: %v", n.name, err)
				return
			}
			won <- n
		}()
	}

	// node-1 crashes: its connection closes, nobody resigns.
	crashed := time.Now()
	n1.nc.Close()
	<-n1.e.Done()
	out.printf("node-1: stopped leading (%v)", context.Cause(n1.e.Context()) != nil)
	var next *node
	select {
	case next = <-won:
	case <-ctx.Done():
		return ctx.Err()
	}
	out.printf("%s: leading after node-1 crashed (within TTL+1s: %v, new term > old: %v)",
		next.name, time.Since(crashed) <= cfg.TTL+time.Second, next.e.Term() > term)
	if err := next.e.Proclaim(ctx, "http://"+next.name+":9090"); err != nil {
		return err
	}
	if err := next.e.Resign(ctx); err != nil {
		return err
	}
	out.printf("%s: resigned", next.name)
	var last *node
	select {
	case last = <-won:
	case <-ctx.Done():
		return ctx.Err()
	}
	out.printf("%s: leading", last.name)
	info, err := obs.e.Leader(ctx)
	if err != nil {
		return err
	}
	out.printf("Leader(): %s %q", info.Holder, info.Value)
	if err := last.e.Resign(ctx); err != nil {
		return err
	}
	// Wait for the observer to report the final vacancy, then stop it. An
	// observer reports states as its watch sees them: a term shorter than
	// the watch's lag (node-2's or node-3's here, on a loaded machine) can
	// pass unseen, so wait for the state, not for a count of vacancies.
	for {
		mu.Lock()
		done := vacant
		mu.Unlock()
		if done {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ocancel()
	seen.Wait()
	return nil
}
