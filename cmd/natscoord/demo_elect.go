package main

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/kvlock"
)

// candidate is one worker's candidacy in the demo run's leader election
// (kvlock: a lock whose holder leads, plus the value it publishes).
type candidate struct {
	locker   *kvlock.Locker
	election *kvlock.Election
	name     string
}

func newCandidate(ctx context.Context, js jetstream.JetStream, run, name string) (*candidate, error) {
	l, err := kvlock.New(ctx, js, kvlock.Config{Name: demoLockName, Holder: name})
	if err != nil {
		return nil, err
	}
	e, err := kvlock.NewElection(l, demoElection(run))
	if err != nil {
		_ = l.Close(ctx)
		return nil, err
	}
	return &candidate{locker: l, election: e, name: name}, nil
}

// campaign returns once this candidate leads (having published its name as
// the election's value), or with ctx's error. It returns the leader's term,
// its fencing token.
func (c *candidate) campaign(ctx context.Context) (uint64, error) {
	if err := c.election.Campaign(ctx, c.name); err != nil {
		return 0, err
	}
	return c.election.Term(), nil
}

// close resigns (if leading) and stops the candidacy.
func (c *candidate) close(ctx context.Context) error { return c.locker.Close(ctx) }
