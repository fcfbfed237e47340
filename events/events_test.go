package events_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func ev(name events.Name, key string, rev uint64) events.Event {
	return events.Event{Name: name, Source: "tasks", Key: key, Revision: rev, Status: "pending", Actor: "a", Time: t0}
}

func TestNameValid(t *testing.T) {
	for _, n := range []events.Name{"ledger.admitted", "a", "ledger.taken_over"} {
		require.True(t, n.Valid(), n)
	}
	for _, n := range []events.Name{"", ".a", "a.", "a..b", "a.*", "a.>", "a b", "a\tb"} {
		require.False(t, n.Valid(), n)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	e := ev("ledger.blocked", "k.1 x", 7)
	e.BlockedBy, e.Fence, e.Owner = "p", 3, "w"
	b, err := events.Marshal(e)
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"ledger.blocked","source":"tasks","key":"k.1 x","revision":7,"status":"pending",
		"actor":"a","owner":"w","fence":3,"blocked_by":"p","time":"2026-11-29T10:00:00Z"}`, string(b))
	got, err := events.Unmarshal(b)
	require.NoError(t, err)
	require.Equal(t, e, got)
	for _, bad := range []string{`{`, `[]`, `{"name":"x y","source":"s","key":"k"}`, `{"name":"x","key":"k"}`, `{"name":"x","source":"s"}`} {
		_, err := events.Unmarshal([]byte(bad))
		require.Error(t, err, bad)
	}
	_, err = events.Marshal(events.Event{})
	require.ErrorIs(t, err, events.ErrInvalidName)
	require.NotEqual(t, events.MsgID(ev("x", "a/b", 1)), events.MsgID(events.Event{Name: "x", Source: "tasks\"/\"a", Key: "b", Revision: 1}))
}

func FuzzUnmarshal(f *testing.F) {
	b, _ := events.Marshal(ev("ledger.admitted", "k", 1))
	f.Add(b)
	f.Add([]byte(`{"name":"ledger.completed","source":"s","key":"k","revision":18446744073709551615,"time":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"name":"..","source":"s","key":"k"}`))
	f.Add([]byte(`null`))
	f.Add([]byte("{\"name\":\"ledger.admitted\",\"source\":\"s\",\"key\":\"a\xffb\",\"blocked_by\":\"\xc3\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := events.Unmarshal(data)
		if err != nil {
			return
		}
		out, err := events.Marshal(e)
		require.NoError(t, err)
		e2, err := events.Unmarshal(out)
		require.NoError(t, err)
		require.Equal(t, events.MsgID(e), events.MsgID(e2))
	})
}

// TestJetStreamBus: the stream is created (then bound), duplicates are
// dropped by the stream, core subscribers see each write once thanks to
// Live's revision filter, and a durable consumer resumes after a restart.
func TestJetStreamBus(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	bus, err := events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{})
	require.NoError(t, err)
	require.Equal(t, "LEDGER", bus.Stream())
	bus2, err := events.NewJetStreamBus(ctx, n.NewJS(t), events.JetStreamBusConfig{})
	require.NoError(t, err, "binds the existing stream")

	liveC := make(chan events.Event, 100)
	live, err := events.SubscribeLive(n.NC, "ledger.*", func(e events.Event) { liveC <- e }, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, live.Close()) })

	require.NoError(t, bus.Publish(ctx, ev("ledger.admitted", "a", 1)))
	require.NoError(t, bus2.Publish(ctx, ev("ledger.admitted", "a", 1)), "a duplicate is success")
	require.NoError(t, bus.Publish(ctx, ev("ledger.claimed", "a", 2)))
	require.NoError(t, bus.Publish(ctx, ev("ledger.claimed", "a", 1)), "an older revision is dropped by Live")
	require.ErrorIs(t, bus.Publish(ctx, events.Event{Name: "ledger.x"}), events.ErrInvalidEvent)

	require.Equal(t, uint64(1), natstest.Recv(t, liveC, 5*time.Second, "live 1").Revision)
	require.Equal(t, uint64(2), natstest.Recv(t, liveC, 5*time.Second, "live 2").Revision)

	str, err := n.JS.Stream(ctx, "LEDGER")
	require.NoError(t, err)
	info, err := str.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(2), info.State.Msgs, "(source, key, revision) names one write: repeats are dropped whatever their name")

	var mu sync.Mutex
	var got []uint64
	recv := make(chan struct{}, 10)
	handler := func(_ context.Context, e events.Event) error {
		mu.Lock()
		got = append(got, e.Revision)
		mu.Unlock()
		recv <- struct{}{}
		return nil
	}
	cfg := events.DurableConfig{Durable: "audit", Subjects: []string{"ledger.admitted", "ledger.claimed"}}
	d, err := events.SubscribeDurable(ctx, n.JS, cfg, handler, nil)
	require.NoError(t, err)
	for range 2 {
		natstest.Recv(t, recv, 5*time.Second, "durable")
	}
	require.NoError(t, d.Close())
	require.NoError(t, d.Close(), "Close is idempotent")
	natstest.WaitClosed(t, d.Done(), 5*time.Second, "Done after Close")
	require.NoError(t, bus.Publish(ctx, ev("ledger.claimed", "a", 3)))
	d, err = events.SubscribeDurable(ctx, n.NewJS(t), cfg, handler, nil)
	require.NoError(t, err, "resume after restart")
	natstest.Recv(t, recv, 5*time.Second, "durable after restart")
	d.Close()
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []uint64{1, 2, 3}, got, "each stored event once, in stream order, resumed after the last ack")
}

func TestDurableRedeliversOnError(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	bus, err := events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{Stream: "EV", Subjects: []string{"ev.>"}})
	require.NoError(t, err)
	require.NoError(t, bus.Publish(ctx, ev("ev.one", "k", 1)))
	_, err = n.JS.Publish(ctx, "ev.junk", []byte("not an event"))
	require.NoError(t, err)
	require.NoError(t, bus.Publish(ctx, ev("ev.two", "k", 2)))

	tries := 0
	done := make(chan events.Name, 10)
	errs := make(chan error, 10)
	d, err := events.SubscribeDurable(ctx, n.JS, events.DurableConfig{Stream: "EV", Durable: "d"}, func(_ context.Context, e events.Event) error {
		if e.Name == "ev.one" {
			tries++
			if tries == 1 {
				return context.DeadlineExceeded
			}
		}
		done <- e.Name
		return nil
	}, func(err error) { errs <- err })
	require.NoError(t, err)
	defer d.Close()
	require.Error(t, natstest.Recv(t, errs, 5*time.Second, "handler error reported"))
	require.Equal(t, events.Name("ev.one"), natstest.Recv(t, done, 5*time.Second, "redelivered"))
	require.Error(t, natstest.Recv(t, errs, 5*time.Second, "junk reported"))
	require.Equal(t, events.Name("ev.two"), natstest.Recv(t, done, 5*time.Second, "next"))
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	_, err := events.NewJetStreamBus(ctx, nil, events.JetStreamBusConfig{})
	require.ErrorIs(t, err, events.ErrInvalidConfig)
	_, err = events.SubscribeLive(nil, "x", func(events.Event) {}, nil)
	require.ErrorIs(t, err, events.ErrInvalidConfig)
	_, err = events.SubscribeDurable(ctx, nil, events.DurableConfig{}, nil, nil)
	require.ErrorIs(t, err, events.ErrInvalidConfig)
	n := natstest.WithServer(t)
	_, err = events.NewJetStreamBus(ctx, n.JS, events.JetStreamBusConfig{Stream: "a.b"})
	require.ErrorIs(t, err, events.ErrInvalidConfig)
}

// FuzzMarshalMatchesEncodingJSON: Marshal's direct encoder writes exactly
// what encoding/json writes for every valid event, and the same error for
// every invalid one.
func FuzzMarshalMatchesEncodingJSON(f *testing.F) {
	f.Add("ledger.claimed", "tasks", "k.1 x", uint64(7), "claimed", "a", "w", uint64(3), "", int64(0), int64(0), "kind", 2, "")
	f.Add("ledger.blocked", "s<&>", "a\u2028\"\\\n", uint64(1<<63), "", "", "", uint64(0), "p\x01", int64(-62135596800), int64(1), "", 0, "boom\t")
	f.Add("ledger.retried", "s", "k\xff", uint64(1), "pending", "é", "", uint64(1), "", int64(1764582000), int64(1764582060), "", -1, "err")
	f.Add("x", "s", "k", uint64(1), "", "", "", uint64(0), "", int64(253402300800), int64(0), "", 0, "")
	f.Fuzz(func(t *testing.T, name, source, key string, rev uint64, status, actor, owner string, fence uint64,
		blockedBy string, tsec, runSec int64, kind string, attempts int, lastErr string) {
		e := events.Event{
			Name: events.Name(name), Source: source, Key: key, Revision: rev, Status: status, Actor: actor,
			Owner: owner, Fence: fence, BlockedBy: blockedBy, Time: time.Unix(tsec, tsec%1e9).In(time.FixedZone("z", int(tsec%50000))),
			Kind: kind, Attempts: attempts, LastError: lastErr,
		}
		if runSec != 0 {
			e.RunAt = time.Unix(runSec, 0).UTC()
		}
		got, err := events.Marshal(e)
		if verr := e.Validate(); verr != nil {
			require.Equal(t, verr, err)
			return
		}
		want, werr := json.Marshal(e)
		if werr != nil {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}
