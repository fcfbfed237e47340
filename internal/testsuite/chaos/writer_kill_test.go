package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// Settings of the ledger writer child.
const (
	envWriter    = "NATSCOORD_CHAOS_WRITER"     // writer: name, also its key prefix
	envKillPoint = "NATSCOORD_CHAOS_KILL_POINT" // writer: after claiming its task of this number it says so and waits (0: never)
)

const writerKillBucket = "writerkill"

// childLedgerWriter admits, claims and completes tasks of its own until
// stopped; with a kill point it stops right after the claim write of that
// task, says "claimed <key>" and waits to be SIGKILLed there.
func childLedgerWriter(ctx context.Context) error {
	name := os.Getenv(envWriter)
	killPoint, err := strconv.Atoi(os.Getenv(envKillPoint))
	if err != nil {
		return err
	}
	nc, js, err := childJetStream()
	if err != nil {
		return err
	}
	defer nc.Close()
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: writerKillBucket})
	if err != nil {
		return err
	}
	l, err := kvledger.New(store)
	if err != nil {
		return err
	}
	say("ready")
	now := time.Now()
	for i := 1; ctx.Err() == nil; i++ {
		key := kvledger.IdempotencyKey(fmt.Sprintf("%s-%d", name, i))
		if _, err := l.Admit(ctx, kvledger.Actor(name), key, 1, nil, now); err != nil {
			break
		}
		f, err := l.Claim(ctx, kvledger.Actor(name), key, kvledger.OwnerID(name), time.Minute, now)
		if err != nil {
			break
		}
		if i == killPoint {
			say("claimed %s", key)
			<-ctx.Done() // SIGKILLed here, right after its write
			return nil
		}
		if err := l.Complete(ctx, kvledger.Actor(name), key, kvledger.OwnerID(name), f, kvledger.StatusCompleted, now); err != nil {
			break
		}
		if i == 20 {
			say("wrote 20")
		}
	}
	say("closed ok")
	return nil
}

// auditLog keeps what a durable event consumer delivered, per key.
type auditLog struct {
	mu    sync.Mutex
	byKey map[string][]events.Event
	gaps  []events.Gap
}

func (a *auditLog) handle(_ context.Context, e events.Event) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byKey[e.Key] = append(a.byKey[e.Key], e)
	return nil
}

func (a *auditLog) gap(g events.Gap) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gaps = append(a.gaps, g)
}

// TestWriterSIGKILLEventsExactlyOnce: the ledger's events are its bucket's
// writes, so a writer SIGKILLed right after its write loses no event. Two
// of three writer processes are SIGKILLed right after a claim write; a
// durable consumer (closed and resumed midway) delivers, for every task
// key, every write once, in write order, each linked to the one before
// (no gap), up to the record's last write.
func TestWriterSIGKILLEventsExactlyOnce(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 2*time.Minute)
	store, err := kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: writerKillBucket})
	require.NoError(t, err)
	audit := &auditLog{byKey: map[string][]events.Event{}}
	subscribe := func() *events.Durable {
		d, err := events.SubscribeDurable(ctx, n.JS, store.EventSource(), events.DurableConfig{Durable: "audit", OnGap: audit.gap},
			audit.handle, func(err error) { t.Error(err) })
		require.NoError(t, err)
		return d
	}
	d := subscribe()

	env := func(name string, killPoint int) []string {
		return []string{envURL + "=" + n.Server.ClientURL(), envWriter + "=" + name, envKillPoint + "=" + strconv.Itoa(killPoint)}
	}
	survivor, _ := startChild(t, "ledgerwriter", env("s", 0)...)
	var doomed []*child
	for i, point := range []int{7, 11} {
		c, _ := startChild(t, "ledgerwriter", env(fmt.Sprintf("d%d", i), point)...)
		line := natstest.Recv(t, c.lines, 30*time.Second, "writer claims its kill point")
		require.Equal(t, fmt.Sprintf("claimed d%d-%d", i, point), line)
		doomed = append(doomed, c)
	}
	require.NoError(t, d.Close()) // resumed below, after its last ack
	for _, c := range doomed {
		c.Kill(t) // SIGKILL right after its claim write
	}
	d = subscribe()
	t.Cleanup(func() { _ = d.Close() })
	require.Equal(t, "wrote 20", natstest.Recv(t, survivor.lines, 30*time.Second, "survivor writes"))
	survivor.Stop(t)

	var recs []kvledger.TaskState
	require.NoError(t, store.Range(ctx, func(rec kvledger.TaskState) bool { recs = append(recs, rec); return true }))
	natstest.Eventually(t, 30*time.Second, func() bool {
		audit.mu.Lock()
		defer audit.mu.Unlock()
		for _, rec := range recs {
			evs := audit.byKey[string(rec.Key)]
			if len(evs) == 0 || evs[len(evs)-1].Revision < rec.Rev {
				return false
			}
		}
		return true
	}, "the consumer reaches every record's last write")

	audit.mu.Lock()
	defer audit.mu.Unlock()
	require.Empty(t, audit.gaps)
	events := 0
	for _, rec := range recs {
		evs := audit.byKey[string(rec.Key)]
		stored, err := store.KeyEvents(ctx, rec.Key)
		require.NoError(t, err)
		require.Len(t, evs, len(stored), "%s: every stored write delivered once", rec.Key)
		var prev uint64
		for i, e := range evs {
			require.Equal(t, stored[i].Revision, e.Revision, "%s: in write order", rec.Key)
			require.Equal(t, prev, e.PrevRevision, "%s: linked to the write before", rec.Key)
			prev = e.Revision
		}
		require.Equal(t, rec.LastEvent, evs[len(evs)-1].Name, rec.Key)
		events += len(evs)
	}
	for i := range doomed {
		key := fmt.Sprintf("d%d-%d", i, []int{7, 11}[i])
		names := []string{}
		for _, e := range audit.byKey[key] {
			names = append(names, string(e.Name))
		}
		require.Equal(t, []string{string(kvledger.AdmittedEvent), string(kvledger.ClaimedEvent)}, names, "%s: the claim its writer was killed after", key)
	}
	report(t, "writerkill", fmt.Sprintf("writes are the events: 2 of 3 writers SIGKILLed right after a claim write, the durable consumer closed and resumed; %d keys, %d events, each write delivered once, no gap",
		len(recs), events))
}
