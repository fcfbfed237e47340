package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A live `events tail` needs what README "Security and permissions" says
// a live subscriber needs: the subscription to ledger.<bucket>.>. A user
// allowed nothing else (it cannot read the bucket's stream) is told that
// the bucket could not be checked and still gets the feed; before, the
// tail gave up with "context deadline exceeded".
func TestEventsTailLiveNeedsOnlyItsSubject(t *testing.T) {
	srv, err := embedded.Start(context.Background(), embedded.Options{DataDir: t.TempDir(), Auth: embedded.Auth{Users: []embedded.User{
		{Name: "admin", Password: "a"},
		{Name: "live", Password: "l", Publish: []string{}, Subscribe: []string{kvledger.LiveSubject(defaultLedgerBucket)}},
	}}})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
	})
	host := strings.TrimPrefix(srv.ClientURL(), "nats://")
	admin := &cli{t: t, url: "nats://admin:a@" + host}
	admin.ok("ledger", "admit", "--no-kind", "before", "--seq", "1") // the bucket exists

	tail := startRun(t, "--server", "nats://live:l@"+host, "--timeout", "1s", "--json", "events", "tail", "--count", "1")
	natstest.Eventually(t, 20*time.Second, func() bool {
		return strings.Contains(tail.err.String(), "printing the live feed")
	}, "the tail says it could not check the bucket")
	admin.ok("ledger", "admit", "--no-kind", "after", "--seq", "1")
	r := tail.result(t)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"key":"after"`)
	require.Contains(t, r.stderr, "natscoord: events tail: could not check the bucket")
	require.Contains(t, r.stderr, "ledger."+defaultLedgerBucket+".>", "it names the subject it follows")
	require.NotContains(t, r.stderr, ":l@", "no password")
}

// --event takes the names the ledger writes: a mistyped one (which would
// match no write, so the tail waited for ever) is refused, naming the
// names, with the one meant when only the "ledger." was left out.
func TestEventsTailUnknownEvent(t *testing.T) {
	c, _ := newCLI(t)
	msg := c.fail("events", "tail", "--event", "ledger.bogus")
	require.Contains(t, msg, `--event "ledger.bogus" is not an event name the ledger writes`)
	require.Contains(t, msg, string(kvledger.CompletedEvent)+", ")
	require.Contains(t, c.fail("events", "tail", "--event", "claimed", "--durable", "d"), `(did you mean "ledger.claimed"?)`)
	require.Contains(t, c.fail("events", "tail", "--event", "ledger.>"), "not an event name")
	require.Contains(t, c.fail("events", "tail", "--status", "done"), `--status "done" is not a record status: one of pending, claimed, completed, failed, blocked`)
}

// A failed Complete is ledger.completed, the seed's name, as a successful
// one; --status picks the failures by the write's status header. A
// script that still asks for ledger.failed (what earlier versions wrote)
// is told what to ask for instead, not left waiting for a name no write
// carries.
func TestEventsTailFailedCompletion(t *testing.T) {
	c, _ := newCLI(t)
	for _, k := range []string{"good", "bad"} {
		c.ok("ledger", "admit", "--no-kind", k, "--seq", "1")
		claimed := jsonTask(t, c.ok("--json", "ledger", "claim", k, "--owner", "w"))
		status := "completed"
		if k == "bad" {
			status = "failed"
		}
		c.ok("ledger", "complete", k, "--owner", "w", "--fence", fmt.Sprint(uint64(claimed.Fence)), "--status", status)
	}
	tail := func(args ...string) []events.Event {
		t.Helper()
		var got []events.Event
		for _, line := range strings.Split(strings.TrimSpace(c.ok(append([]string{"--json", "events", "tail"}, args...)...)), "\n") {
			e, err := events.Unmarshal([]byte(line))
			require.NoError(t, err)
			got = append(got, e)
		}
		return got
	}
	got := tail("--durable", "done", "--event", string(kvledger.CompletedEvent), "--count", "2")
	require.Equal(t, []string{"good", "bad"}, []string{got[0].Key, got[1].Key})
	require.Equal(t, []string{"completed", "failed"}, []string{got[0].Status, got[1].Status})
	got = tail("--durable", "fails", "--event", string(kvledger.CompletedEvent), "--status", "failed", "--count", "1")
	require.Equal(t, "bad", got[0].Key)
	require.Equal(t, kvledger.CompletedEvent, got[0].Name)
	got = tail("--durable", "anyfail", "--status", "failed", "--count", "1")
	require.Equal(t, "bad", got[0].Key, "a status alone picks the failures too")

	for _, old := range []string{"ledger.failed", "failed"} {
		msg := c.fail("events", "tail", "--event", old)
		require.Contains(t, msg, "is no longer written")
		require.Contains(t, msg, "--event ledger.completed --status failed")
	}
}

// What `events tail` says on stderr besides its errors (a gap: writes
// the stream no longer kept) starts "natscoord: events tail:", as its
// reconnection messages and errors do.
func TestEventsTailGapSaid(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "first", "--seq", "1") // the stream starts before k's first write
	for seq := 1; seq <= kvledger.EventHistory+2; seq++ {
		c.ok("ledger", "admit", "--no-kind", "k", "--seq", fmt.Sprint(seq))
	}
	r := c.run("events", "tail", "--durable", "gap", "--key", "k", "--count", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "natscoord: events tail: events: gap in "+defaultLedgerBucket+` key "k"`)
}

// `events tail` shows a worker's default owner id ("<host>:<pid>:<nuid>")
// whole, as `ledger workers` and `ledger ls` do, so that the one can be
// looked up in the other.
func TestEventsTailOwnerWhole(t *testing.T) {
	c, _ := newCLI(t)
	const owner = "3f4e5d6c7b8a:1234:OcvkxNuBKALAo0SAWKKEv5" // a container's 12-character host name, a 4-digit pid
	c.ok("ledger", "admit", "--no-kind", "k", "--seq", "1")
	c.ok("ledger", "claim", "k", "--owner", owner)
	out := c.ok("events", "tail", "--durable", "owner", "--count", "2")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 3, out)
	require.Contains(t, lines[2], " "+owner+" ")
	requireColumn(t, []string{lines[0], lines[2]}, "OWNER", owner)
}

// `ledger rm KEY --force` checks nothing, but its delete marker is a
// ledger.deleted event on the feed like every removal's (its help and
// README said "no event").
func TestRmForceLeavesDeletedEvent(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "k", "--seq", "1")
	require.Contains(t, c.ok("ledger", "rm", "k", "--help"), "it still leaves a ledger.deleted event")
	c.ok("ledger", "rm", "k", "--force")
	out := c.ok("--json", "events", "tail", "--durable", "rm", "--key", "k", "--count", "2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Contains(t, lines[1], `"name":"`+string(kvledger.DeletedEvent)+`"`)
}
