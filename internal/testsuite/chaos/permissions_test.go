package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// kvPermissions are the subjects a client of the KV bucket needs to use it
// (bind, read from the leader and directly, write, watch), as listed in
// README "Security and permissions". Creating a missing bucket also needs
// publish on $JS.API.STREAM.CREATE.KV_<bucket>.
func kvPermissions(bucket string) []string {
	s := "KV_" + bucket
	return []string{
		"$JS.API.STREAM.INFO." + s,
		"$JS.API.STREAM.MSG.GET." + s,
		"$JS.API.DIRECT.GET." + s + ".>",
		"$JS.API.CONSUMER.CREATE." + s + ".>",
		"$JS.API.CONSUMER.DELETE." + s + ".>",
		"$JS.FC." + s + ".>",
		"$KV." + bucket + ".>",
	}
}

// durablePermissions: what a durable event subscriber needs on top of
// nothing else (it never writes the bucket): read the stream's state,
// create its consumer, pull from it, acknowledge (README "Security and
// permissions").
func durablePermissions(stream string) []string {
	return []string{
		"$JS.API.STREAM.INFO." + stream,
		"$JS.API.CONSUMER.CREATE." + stream + ".>",
		"$JS.API.CONSUMER.MSG.NEXT." + stream + ".>",
		"$JS.ACK." + stream + ".>",
	}
}

// TestSubjectPermissions: a client whose user may publish to exactly the
// subjects README lists (and subscribe to _INBOX.>) runs kvlease, kvlock and
// kvledger (whose writes are its events); a client missing the bucket's $KV.<bucket>.>
// publish permission, or the _INBOX subscription, is refused.
func TestSubjectPermissions(t *testing.T) {
	const pfx = "perm"
	exact := append(append(kvPermissions(pfx+"_leases"), kvPermissions(pfx+"_locks")...), kvPermissions(pfx+"_tasks")...)
	var noKV []string
	for _, s := range exact {
		if s != "$KV."+pfx+"_leases.>" {
			noKV = append(noKV, s)
		}
	}
	inbox := []string{"_INBOX.>"}
	srv, err := embedded.Start(context.Background(), embedded.Options{DataDir: t.TempDir(), Auth: embedded.Auth{Users: []embedded.User{
		{Name: "admin", Password: "a"},
		{Name: "app", Password: "b", Publish: exact, Subscribe: inbox},
		{Name: "nokv", Password: "c", Publish: noKV, Subscribe: inbox},
		{Name: "noinbox", Password: "d", Publish: exact, Subscribe: []string{}},
		{Name: "audit", Password: "e", Publish: durablePermissions("KV_" + pfx + "_tasks"), Subscribe: inbox},
	}}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Shutdown(context.Background())) })
	connect := func(user, pw string) jetstream.JetStream {
		nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo(user, pw), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		return js
	}
	// The operator (admin) creates the buckets.
	exerciseComponents(t, connect("admin", "a"), pfx)

	t.Run("exact permissions work", func(t *testing.T) {
		exerciseComponents(t, connect("app", "b"), pfx)
	})
	t.Run("without $KV publish refused", func(t *testing.T) {
		js := connect("nokv", "c")
		ctx := natstest.Context(t, 2*time.Second)
		err := exerciseLease(ctx, js, pfx+"_leases")
		require.Error(t, err)
		require.ErrorIs(t, js.Conn().LastError(), nats.ErrPermissionViolation, "server reported %v", err)
		t.Logf("refused: %v (connection: %v)", err, js.Conn().LastError())
	})
	t.Run("durable event subscription", func(t *testing.T) {
		// exerciseComponents has written ledger records, its events; a
		// subscriber holding only the durable permissions reads and
		// acknowledges them.
		ctx := natstest.Context(t, 10*time.Second)
		got := make(chan events.Event, 1)
		d, err := events.SubscribeDurable(ctx, connect("audit", "e"), kvledger.EventSource(pfx+"_tasks"), events.DurableConfig{Durable: "perm-audit"},
			func(_ context.Context, e events.Event) error {
				select {
				case got <- e:
				default:
				}
				return nil
			}, func(err error) { t.Logf("durable subscriber: %v", err) })
		require.NoError(t, err)
		defer d.Close()
		e := natstest.Recv(t, got, 5*time.Second, "an event through the durable consumer")
		require.NotEmpty(t, e.Key)

		// Without the consumer API on that bucket's stream it is refused.
		actx := natstest.Context(t, 2*time.Second)
		_, err = events.SubscribeDurable(actx, connect("audit", "e"), kvledger.EventSource(pfx+"_locks"), events.DurableConfig{Durable: "perm-denied"},
			func(context.Context, events.Event) error { return nil }, nil)
		require.Error(t, err)
		t.Logf("refused: %v", err)
	})
	t.Run("without _INBOX subscribe refused", func(t *testing.T) {
		js := connect("noinbox", "d")
		ctx := natstest.Context(t, 2*time.Second)
		err := exerciseLease(ctx, js, pfx+"_leases")
		require.Error(t, err)
		t.Logf("refused: %v", err)
	})
	report(t, "security", fmt.Sprintf("permissions: a user with exactly %d publish subjects + _INBOX.> runs kvlease, kvlock, kvledger (its writes are its events); a durable event subscriber needs 4 publish subjects; without $KV publish, the consumer API or _INBOX subscribe a user is refused", len(exact)))
}
