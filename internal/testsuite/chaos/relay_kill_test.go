package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// Settings of the ledger writer child.
const (
	envWriter     = "NATSCOORD_CHAOS_WRITER"      // writer: name, also its key prefix
	envStallAfter = "NATSCOORD_CHAOS_STALL_AFTER" // writer: events published before its bus stalls (0: never)
)

const relayKillBucket = "relaykill"

// stallingBus publishes the first n events and then holds every publish
// for ever, announcing the first held one: the process is then between a
// write and its publish, and its relay holds revisions unacknowledged.
type stallingBus struct {
	next  events.Bus
	left  atomic.Int64
	never bool
	said  atomic.Bool
}

func (b *stallingBus) Publish(ctx context.Context, e events.Event) error {
	if b.never || b.left.Add(-1) >= 0 {
		return b.next.Publish(ctx, e)
	}
	if !b.said.Swap(true) {
		say("stalled %s %d", e.Key, e.Revision)
	}
	<-ctx.Done()
	return ctx.Err()
}

// childLedgerWriter admits, claims and completes tasks of its own with a
// relay running, until killed or told to stop; on stop it closes the
// ledger (draining the relay) and announces "closed <error or ok>".
func childLedgerWriter(ctx context.Context) error {
	name := os.Getenv(envWriter)
	stallAfter, err := strconv.Atoi(os.Getenv(envStallAfter))
	if err != nil {
		return err
	}
	nc, js, err := childJetStream()
	if err != nil {
		return err
	}
	defer nc.Close()
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: relayKillBucket})
	if err != nil {
		return err
	}
	jsBus, err := events.NewJetStreamBus(ctx, js, events.JetStreamBusConfig{})
	if err != nil {
		return err
	}
	bus := &stallingBus{next: jsBus, never: stallAfter == 0}
	bus.left.Store(int64(stallAfter))
	l, err := kvledger.New(store, bus)
	if err != nil {
		return err
	}
	if err := l.StartRelay(ctx, kvledger.RelayConfig{}); err != nil {
		return err
	}
	say("ready")
	now := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		key := kvledger.IdempotencyKey(fmt.Sprintf("%s-%d", name, i))
		if _, err := l.Admit(ctx, kvledger.Actor(name), key, 1, nil, now); err != nil {
			break
		}
		f, err := l.Claim(ctx, kvledger.Actor(name), key, kvledger.OwnerID(name), time.Minute, now)
		if err != nil {
			break
		}
		if err := l.Complete(ctx, kvledger.Actor(name), key, kvledger.OwnerID(name), f, kvledger.StatusCompleted, now); err != nil {
			break
		}
		if stallAfter == 0 && i == 20 {
			say("wrote 20")
		}
	}
	if err := l.Close(context.Background()); err != nil {
		say("closed %v", err)
	} else {
		say("closed ok")
	}
	return nil
}

// TestRelaySIGKILLEventsComplete: two of three writer processes are
// SIGKILLed while each is between a write and its publish (its bus holds
// the publish) and their relays hold revisions unacknowledged. Right after
// the survivor's Close returns (which drains its relay), the event stream
// already holds, for every task key in the bucket, the event of its last
// write.
func TestRelaySIGKILLEventsComplete(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 2*time.Minute)
	env := func(name string, stall int) []string {
		return []string{envURL + "=" + n.Server.ClientURL(), envWriter + "=" + name, envStallAfter + "=" + strconv.Itoa(stall)}
	}
	survivor, _ := startChild(t, "ledgerwriter", env("s", 0)...)
	var doomed []*child
	for i, stall := range []int{7, 11} {
		c, _ := startChild(t, "ledgerwriter", env(fmt.Sprintf("d%d", i), stall)...)
		line := natstest.Recv(t, c.lines, 30*time.Second, "writer stalls")
		require.True(t, strings.HasPrefix(line, "stalled "), line)
		doomed = append(doomed, c)
	}
	for _, c := range doomed {
		c.Kill(t) // SIGKILL between a write and its publish
	}
	killed := time.Now()
	require.Equal(t, "wrote 20", natstest.Recv(t, survivor.lines, 30*time.Second, "survivor writes"))
	survivor.Stop(t)
	require.Equal(t, "closed ok", natstest.Recv(t, survivor.lines, 30*time.Second, "survivor closed"), survivor.stderr.String())
	drained := time.Since(killed)

	// Now, not later: the stream must already be complete.
	last := map[string]events.Event{}
	str, err := n.JS.Stream(ctx, events.DefaultStream)
	require.NoError(t, err)
	info, err := str.Info(ctx)
	require.NoError(t, err)
	oc, err := str.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	for range info.State.Msgs {
		m, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second))
		require.NoError(t, err)
		e, err := events.Unmarshal(m.Data())
		require.NoError(t, err)
		if e.Source == relayKillBucket {
			last[e.Key] = e
		}
	}
	store, err := kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: relayKillBucket})
	require.NoError(t, err)
	keys, missing := 0, 0
	require.NoError(t, store.Range(ctx, func(rec kvledger.TaskState) bool {
		keys++
		e, ok := last[string(rec.Key)]
		if !ok || e.Revision != rec.Rev || e.Name != rec.LastEvent {
			missing++
			t.Errorf("%s: record at revision %d (%s), last event %+v", rec.Key, rec.Rev, rec.LastEvent, e)
		}
		return true
	}))
	report(t, "relaykill", fmt.Sprintf("relay drain: 2 of 3 writers SIGKILLed between write and publish, relays holding revisions; %d keys, last event missing for %d right after the survivor's Close (%v after the kills)",
		keys, missing, drained.Round(time.Millisecond)))
}
