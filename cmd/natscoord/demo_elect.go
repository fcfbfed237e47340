package main

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/kvlease"
)

// candidate is one worker's candidacy for leadership of a demo run.
type candidate struct {
	m   *kvlease.Manager
	key string
}

func newCandidate(ctx context.Context, js jetstream.JetStream, run, name string) (*candidate, error) {
	m, err := kvlease.NewManager(ctx, js, kvlease.Config{Holder: name})
	if err != nil {
		return nil, err
	}
	return &candidate{m: m, key: "natscoord-demo.leader-" + run}, nil
}

// campaign returns once this candidate leads, or with ctx's error.
func (c *candidate) campaign(ctx context.Context) error {
	for {
		g, ok, err := c.m.AcquireKey(ctx, c.key, 2*time.Second, time.Hour)
		if err != nil {
			return err
		}
		if ok {
			return g.StartRenewing(0)
		}
	}
}

// close resigns (if leading) and stops the candidacy.
func (c *candidate) close(ctx context.Context) error { return c.m.Close(ctx) }
