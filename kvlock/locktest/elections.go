package locktest

import (
	"testing"

	"github.com/natscoord/natscoord/kvlock"
)

func (s suite) election(t *testing.T) {
	ctx := s.ctx(t)
	svc := s.service(t, false)
	name := t.Name()
	cand := func() kvlock.Candidate {
		c, err := svc.Election(name)
		must(t, err, "Election")
		return c
	}
	c1, c2, watcher := cand(), cand(), cand()
	if c1.Name() != name {
		t.Fatalf("Name() = %q, want %q", c1.Name(), name)
	}
	_, err := watcher.Leader(ctx)
	mustIs(t, err, kvlock.ErrNoLeader, "Leader of a vacant election")
	mustIs(t, c1.Resign(ctx), kvlock.ErrNotLeader, "Resign before leading")
	mustIs(t, c1.Proclaim(ctx, "x"), kvlock.ErrNotLeader, "Proclaim before leading")
	if c1.Term() != 0 || c1.Context() != nil {
		t.Fatal("a candidate that does not lead has a term or a context")
	}
	s.wait(t, c1.Done(), "Done of a candidate that does not lead")

	events := watcher.Observe(ctx)
	if ev := recv(t, s, events, "first event"); !ev.Vacant {
		t.Fatalf("first event %+v, want a vacancy", ev)
	}
	must(t, c1.Campaign(ctx, "one"), "Campaign")
	mustIs(t, c1.Campaign(ctx, "again"), kvlock.ErrCampaigning, "a second Campaign")
	ev := recv(t, s, events, "the first leader")
	if ev.Vacant || ev.Info.Value != "one" || ev.Info.Term != c1.Term() || ev.Info.Term == 0 {
		t.Fatalf("leader event %+v, want value one and term %d", ev, c1.Term())
	}
	info, err := watcher.Leader(ctx)
	must(t, err, "Leader")
	if info != ev.Info {
		t.Fatalf("Leader = %+v, Observe said %+v", info, ev.Info)
	}
	if tok, ok := kvlock.TokenFromContext(c1.Context()); !ok || tok != c1.Term() {
		t.Fatalf("leadership context token %d, %v; want %d", tok, ok, c1.Term())
	}
	must(t, c1.Proclaim(ctx, "one'"), "Proclaim")
	if ev := recv(t, s, events, "the proclaimed value"); ev.Info.Value != "one'" || ev.Info.Term != info.Term {
		t.Fatalf("after Proclaim: %+v", ev)
	}
	mustIs(t, c2.Proclaim(ctx, "x"), kvlock.ErrNotLeader, "Proclaim by a follower")

	won := make(chan error, 1)
	go func() { won <- c2.Campaign(ctx, "two") }()
	select {
	case err := <-won:
		t.Fatalf("a second candidate won while the first leads: %v", err)
	default:
	}
	term1 := c1.Term()
	leading := c1.Done()
	must(t, c1.Resign(ctx), "Resign")
	s.wait(t, leading, "Done after Resign")
	must(t, recv(t, s, won, "the second candidate to win"), "second Campaign")
	if ev := recv(t, s, events, "the vacancy"); !ev.Vacant {
		t.Fatalf("after Resign: %+v, want a vacancy", ev)
	}
	ev = recv(t, s, events, "the second leader")
	if ev.Vacant || ev.Info.Value != "two" || ev.Info.Term <= term1 || ev.Info.Term != c2.Term() {
		t.Fatalf("second leader %+v, want value two and a term above %d", ev, term1)
	}
	must(t, c2.Resign(ctx), "Resign")
	if ev := recv(t, s, events, "the last vacancy"); !ev.Vacant {
		t.Fatalf("after the last Resign: %+v", ev)
	}
	mustIs(t, c2.Resign(ctx), kvlock.ErrNotLeader, "Resign twice")
	_, err = watcher.Leader(ctx)
	mustIs(t, err, kvlock.ErrNoLeader, "Leader after every candidate resigned")
}
