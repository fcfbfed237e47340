package kvledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
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

// keyEvents returns the names of key's events from the ledger's store.
func keyEvents(t testing.TB, l *kvledger.Ledger, key string) []events.Name {
	t.Helper()
	evs, err := l.KeyEvents(context.Background(), kvledger.IdempotencyKey(key))
	require.NoError(t, err)
	var out []events.Name
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

var errKilled = errors.New("killed right after its write")

// eventLog collects events from a subscription.
type eventLog struct {
	mu   sync.Mutex
	evs  []events.Event
	gaps []events.Gap
	c    chan events.Event
}

func newEventLog() *eventLog { return &eventLog{c: make(chan events.Event, 10000)} }

func (l *eventLog) handle(_ context.Context, e events.Event) error {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
	l.c <- e
	return nil
}

func (l *eventLog) gap(g events.Gap) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gaps = append(l.gaps, g)
}

func (l *eventLog) byKey(key string) []events.Name {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []events.Name
	for _, e := range l.evs {
		if e.Key == key {
			out = append(out, e.Name)
		}
	}
	return out
}

func (l *eventLog) gapList() []events.Gap {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]events.Gap(nil), l.gaps...)
}

// TestEventsAreTheBucketsWrites: a writer that dies right after each of
// its writes (the test hook aborts every operation there) loses no event:
// a durable consumer on the bucket's stream gets every write once, in
// per-key order, named by its transition, with the previous revision that
// links it to the key's last write; it resumes after its last ack; a
// filter by name reads only the header; the live feed shows every
// transition legibly on ledger.<bucket>.<key>.
func TestEventsAreTheBucketsWrites(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "evs"})
	raw, err := n.NC.SubscribeSync("ledger.>")
	require.NoError(t, err)
	require.NoError(t, n.NC.Flush())

	l := newLedger(t, store)
	kvledger.SetAfterWriteHook(l, func(kvledger.IdempotencyKey, kvledger.TaskState) error { return errKilled })
	now := time.Now()
	_, err = l.Admit(ctx, "t", "a", 1, nil, now)
	require.ErrorIs(t, err, errKilled)
	_, err = l.Submit(ctx, "t", kvledger.Submission{Key: "later", RunAt: now.Add(time.Hour), Now: now})
	require.ErrorIs(t, err, errKilled)
	clean := newLedger(t, store)
	f, err := clean.Claim(ctx, "w", "a", "w", time.Minute, now)
	require.NoError(t, err)
	require.NoError(t, clean.Complete(ctx, "w", "a", "w", f, kvledger.StatusFailed, now))
	_, err = clean.Cancel(ctx, "op", "later", "", now)
	require.NoError(t, err)

	log := newEventLog()
	d, err := events.SubscribeDurable(ctx, n.JS, store.EventSource(), events.DurableConfig{Durable: "all", OnGap: log.gap}, log.handle, func(err error) { t.Error(err) })
	require.NoError(t, err)
	for range 5 {
		natstest.Recv(t, log.c, 10*time.Second, "event")
	}
	require.NoError(t, d.Close())
	require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.CompletedEvent}, log.byKey("a"))
	require.Equal(t, []events.Name{kvledger.ScheduledEvent, kvledger.CancelledEvent}, log.byKey("later"))
	prev := map[string]uint64{}
	for _, e := range log.evs {
		require.Equal(t, prev[e.Key], e.PrevRevision, "%s %s", e.Key, e.Name)
		prev[e.Key] = e.Revision
		require.Equal(t, "evs", e.Source)
	}
	require.Empty(t, log.gapList())

	// Resume after the last ack: only the new write.
	require.NoError(t, clean.Delete(ctx, "op", "a", now))
	log2 := newEventLog()
	d, err = events.SubscribeDurable(ctx, n.JS, store.EventSource(), events.DurableConfig{Durable: "all", OnGap: log2.gap}, log2.handle, func(err error) { t.Error(err) })
	require.NoError(t, err)
	e := natstest.Recv(t, log2.c, 10*time.Second, "event after resume")
	require.Equal(t, kvledger.DeletedEvent, e.Name)
	require.Equal(t, prev["a"], e.PrevRevision)
	require.NoError(t, d.Close())

	// Only failed completions, by the headers (name and status).
	fails := newEventLog()
	d, err = events.SubscribeDurable(ctx, n.JS, store.EventSource(), events.DurableConfig{Durable: "fails",
		Filter: events.Filter{Names: []events.Name{kvledger.CompletedEvent}, Statuses: []string{"failed"}}}, fails.handle, func(err error) { t.Error(err) })
	require.NoError(t, err)
	e = natstest.Recv(t, fails.c, 10*time.Second, "failed completion")
	require.Equal(t, kvledger.CompletedEvent, e.Name)
	require.Equal(t, "a", e.Key)
	require.Equal(t, "failed", e.Status)
	require.NoError(t, d.Close())
	// Every failure of one key: the status header, the key's subject.
	fails = newEventLog()
	d, err = events.SubscribeDurable(ctx, n.JS, store.EventSource(), events.DurableConfig{Durable: "fails-later",
		Filter: events.Filter{Statuses: []string{"failed"}, Keys: []string{"later"}}}, fails.handle, func(err error) { t.Error(err) })
	require.NoError(t, err)
	e = natstest.Recv(t, fails.c, 10*time.Second, "cancel")
	require.Equal(t, kvledger.CancelledEvent, e.Name)
	require.Equal(t, "failed", e.Status)
	require.NoError(t, d.Close())

	// The live feed: every write, legible, its status in a header too.
	for _, want := range []struct{ name, status string }{{"admitted", "pending"}, {"scheduled", "pending"},
		{"claimed", "claimed"}, {"completed", "failed"}, {"cancelled", "failed"}, {"deleted", ""}} {
		m, err := raw.NextMsg(5 * time.Second)
		require.NoError(t, err)
		require.Equal(t, "ledger."+want.name, m.Header.Get(kvledger.EventHeader), m.Subject)
		require.Equal(t, want.status, m.Header.Get(kvledger.StatusHeader), m.Subject)
		if want.name != "deleted" {
			var body map[string]any
			require.NoError(t, json.Unmarshal(m.Data, &body), "%s", m.Data)
			require.Equal(t, "ledger."+want.name, body["last_event"])
			require.Equal(t, want.status, body["status"])
		}
	}
}

// TestEventsLiveSubscription: SubscribeLive on the RePublish subjects
// decodes each write, filters by key and by name.
func TestEventsLiveSubscription(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "live"})
	l := newLedger(t, store)
	all, onlyB := newEventLog(), newEventLog()
	live, err := events.SubscribeLive(n.NC, store.EventSource(), events.LiveConfig{}, func(e events.Event) { _ = all.handle(ctx, e) }, func(err error) { t.Error(err) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = live.Close() })
	liveB, err := events.SubscribeLive(n.NC, store.EventSource(), events.LiveConfig{Filter: events.Filter{Keys: []string{"b.1"}, Names: []events.Name{kvledger.ClaimedEvent}}},
		func(e events.Event) { _ = onlyB.handle(ctx, e) }, func(err error) { t.Error(err) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = liveB.Close() })
	now := time.Now()
	for _, k := range []kvledger.IdempotencyKey{"a", "b.1"} {
		_, err := l.Admit(ctx, "t", k, 1, nil, now)
		require.NoError(t, err)
		_, err = l.Claim(ctx, "w", k, "w", time.Minute, now)
		require.NoError(t, err)
	}
	for range 4 {
		natstest.Recv(t, all.c, 5*time.Second, "live event")
	}
	e := natstest.Recv(t, onlyB.c, 5*time.Second, "b.1 claimed")
	require.Equal(t, "b.1", e.Key)
	require.Equal(t, kvledger.ClaimedEvent, e.Name)
	require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent}, all.byKey("a"))
}

// TestEventsGapReported: a consumer that falls more than the bucket's
// History behind on a key is told which writes it missed, then gets the
// rest.
func TestEventsGapReported(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "gaps"})
	l := newLedger(t, store)
	now := time.Now()
	_, err := l.Admit(ctx, "t", "k", 1, nil, now)
	require.NoError(t, err)
	log := newEventLog()
	d, err := events.SubscribeDurable(ctx, n.JS, store.EventSource(), events.DurableConfig{Durable: "slow", OnGap: log.gap}, log.handle, func(err error) { t.Error(err) })
	require.NoError(t, err)
	natstest.Recv(t, log.c, 10*time.Second, "admission")
	require.NoError(t, d.Close())

	f, err := l.Claim(ctx, "w", "k", "w", time.Minute, now)
	require.NoError(t, err)
	for range kvledger.EventHistory + 5 {
		require.NoError(t, l.Renew(ctx, "w", "k", "w", f, time.Minute, now))
	}
	log2 := newEventLog()
	d, err = events.SubscribeDurable(ctx, n.JS, store.EventSource(), events.DurableConfig{Durable: "slow", OnGap: log2.gap}, log2.handle, func(err error) { t.Error(err) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	for range kvledger.EventHistory {
		natstest.Recv(t, log2.c, 10*time.Second, "kept write")
	}
	gaps := log2.gapList()
	require.NotEmpty(t, gaps, "the missed writes are reported")
	t.Logf("gaps: %v", gaps)
	evs, err := l.KeyEvents(ctx, "k")
	require.NoError(t, err)
	require.Len(t, evs, kvledger.EventHistory)
	found := false
	for _, g := range gaps {
		if g.Key == "k" {
			require.Equal(t, evs[0].PrevRevision, g.Through)
			require.Equal(t, evs[0].Revision, g.Next)
			found = true
		}
	}
	if !found {
		require.Equal(t, "", gaps[0].Key, "a whole-stream gap when no key gap names k")
	}
}

// TestRetentionFinalWriteDoesNotResurrect: under a retention, a final
// write's expiry leaves no earlier write of the record behind (the final
// write rolls its key up): the key reads absent, not claimed again.
func TestRetentionFinalWriteDoesNotResurrect(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "ret", Retention: time.Second})
	l := newLedger(t, store)
	now := time.Now()
	_, err := l.Admit(ctx, "t", "k", 1, nil, now)
	require.NoError(t, err)
	f, err := l.Claim(ctx, "w", "k", "w", time.Minute, now)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "w", "k", "w", f, kvledger.StatusCompleted, now))
	natstest.Eventually(t, 20*time.Second, func() bool {
		_, found, err := l.State(ctx, "k")
		require.NoError(t, err)
		return !found
	}, "the completed record expires")
	st, found, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.False(t, found, "no earlier write came back: %+v", st)
}

// TestMigrateOldLayout: a bucket of the previous layout (History 1, no
// RePublish) is migrated in place when opened by a caller that may update
// its stream; one that may not gets ErrOldLayout naming the command to run.
func TestMigrateOldLayout(t *testing.T) {
	srv, err := embedded.Start(context.Background(), embedded.Options{DataDir: t.TempDir(), Auth: embedded.Auth{Users: []embedded.User{
		{Name: "admin", Password: "a"},
		{Name: "app", Password: "b", Subscribe: []string{"_INBOX.>"}, Publish: []string{"$KV.>", "$JS.API.INFO",
			"$JS.API.STREAM.INFO.>", "$JS.API.STREAM.NAMES", "$JS.API.CONSUMER.>", "$JS.API.DIRECT.GET.>", "$JS.API.STREAM.MSG.GET.>"}},
	}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	ctx := natstest.Context(t, 30*time.Second)
	admin := natstest.JetStream(t, natstest.Connect(t, srv, nats.UserInfo("admin", "a")))
	app, err := jetstream.New(natstest.Connect(t, srv, nats.UserInfo("app", "b")), jetstream.WithDefaultTimeout(time.Second))
	require.NoError(t, err)
	for _, b := range []string{"old", "locked"} {
		_, err := admin.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b, History: 1})
		require.NoError(t, err)
	}

	_, err = kvledger.NewKVStore(ctx, app, kvledger.KVStoreConfig{Bucket: "locked"})
	require.ErrorIs(t, err, kvledger.ErrOldLayout)
	require.ErrorContains(t, err, "natscoord ledger migrate --bucket locked")

	store, err := kvledger.NewKVStore(ctx, admin, kvledger.KVStoreConfig{Bucket: "old"})
	require.NoError(t, err)
	s, err := admin.Stream(ctx, "KV_old")
	require.NoError(t, err)
	require.EqualValues(t, kvledger.EventHistory, s.CachedInfo().Config.MaxMsgsPerSubject)
	require.Equal(t, kvledger.LiveSubject("old"), s.CachedInfo().Config.RePublish.Destination)
	_, err = kvledger.NewKVStore(ctx, app, kvledger.KVStoreConfig{Bucket: "old"})
	require.NoError(t, err, "a migrated bucket opens without the right to update it")
	l := newLedger(t, store)
	_, err = l.Admit(ctx, "t", "k", 1, nil, time.Now())
	require.NoError(t, err)
	_, err = l.Claim(ctx, "w", "k", "w", time.Minute, time.Now())
	require.NoError(t, err)
	require.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent}, keyEvents(t, l, "k"), "the key keeps its writes")
}

// TestRetentionDeleteDoesNotResurrect: under a retention every delete
// marker of a task key expires; a pending record removed by ForceDelete
// (an operator's repair, its record carries no TTL) then reads absent, not
// pending again: the expiring marker rolls the key up.
func TestRetentionDeleteDoesNotResurrect(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "retdel", Retention: time.Second})
	l := newLedger(t, store)
	_, err := l.Admit(ctx, "t", "k", 1, nil, time.Now())
	require.NoError(t, err)
	gone, err := store.ForceDelete(ctx, "k")
	require.NoError(t, err)
	require.True(t, gone)
	kv, err := n.JS.KeyValue(ctx, "retdel")
	require.NoError(t, err)
	natstest.Eventually(t, 20*time.Second, func() bool {
		h, err := kv.History(ctx, "task.k")
		return errors.Is(err, jetstream.ErrKeyNotFound) || (err == nil && h[len(h)-1].Operation() != jetstream.KeyValueDelete)
	}, "the delete marker expires")
	_, found, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.False(t, found, "the removed record does not come back")
}

// TestEventsNameFilterDecodesNothingElse: a consumer following one
// transition reads the header only; a write of another transition is not
// decoded (a body that is not a record there raises no error), and the
// wanted write is delivered.
func TestEventsNameFilterDecodesNothingElse(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	store := newKVStore(t, n.JS, kvledger.KVStoreConfig{Bucket: "namefilter"})
	m := nats.NewMsg("$KV.namefilter.task.junk")
	m.Header.Set(kvledger.EventHeader, string(kvledger.ClaimedEvent))
	m.Data = []byte("not a record")
	_, err := n.JS.PublishMsg(ctx, m)
	require.NoError(t, err)
	l := newLedger(t, store)
	_, err = l.Admit(ctx, "t", "k", 1, nil, time.Now())
	require.NoError(t, err)
	_, err = l.Cancel(ctx, "op", "k", "no", time.Now())
	require.NoError(t, err)

	log := newEventLog()
	errs := make(chan error, 4)
	d, err := events.SubscribeDurable(ctx, n.JS, store.EventSource(), events.DurableConfig{Durable: "cancels",
		Filter: events.Filter{Names: []events.Name{kvledger.CancelledEvent}}}, log.handle, func(err error) { errs <- err })
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	e := natstest.Recv(t, log.c, 10*time.Second, "the cancel")
	require.Equal(t, "k", e.Key)
	select {
	case err := <-errs:
		t.Fatalf("a write of another transition was decoded: %v", err)
	default:
	}
}
