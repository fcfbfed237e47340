package kvledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// walkSpy is a KVStore that, on each read of the key watched, records
// which keys the lease bucket holds: what a failure's dependency walk
// sees of the failed claim's lease while it runs.
type walkSpy struct {
	*kvledger.KVStore
	t       *testing.T
	js      jetstream.JetStream
	leases  string
	watched kvledger.IdempotencyKey
	seen    [][]string
}

func (s *walkSpy) Load(ctx context.Context, key kvledger.IdempotencyKey) (kvledger.TaskState, bool, error) {
	if key == s.watched {
		s.seen = append(s.seen, liveLeaseKeys(s.t, s.js, s.leases))
	}
	return s.KVStore.Load(ctx, key)
}

// A failure ends its claim's lease before it walks its dependents: from
// the write on no record names the lease, so it is not left live (a key
// every lease watch is sent) for as long as the walk takes. Complete and
// the runtime's outcome, awaited or pipelined (FinishAsync, which before
// never deleted the lease), end a claim the same way.
func TestFailureDropsLeaseBeforeWalk(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	const leases = "walk_leases"
	spy := &walkSpy{KVStore: newKVStore(t, n.JS, kvledger.KVStoreConfig{}), t: t, js: n.JS, leases: leases}
	l := leaseLedger(t, n.JS, spy, leases)
	end := map[string]func(key kvledger.IdempotencyKey, fence kvledger.FenceToken) error{
		"Complete": func(key kvledger.IdempotencyKey, fence kvledger.FenceToken) error {
			return l.Complete(ctx, "w", key, "w", fence, kvledger.StatusFailed, time.Now())
		},
		"Finish": func(key kvledger.IdempotencyKey, fence kvledger.FenceToken) error {
			_, err := l.Finish(ctx, "w", key, "w", fence, kvledger.Outcome{Status: kvledger.StatusFailed, Error: "boom"}, time.Now())
			return err
		},
		"FinishAsync": func(key kvledger.IdempotencyKey, fence kvledger.FenceToken) error {
			_, err := l.FinishAsync(ctx, "w", key, "w", fence, kvledger.Outcome{Status: kvledger.StatusFailed, Error: "boom"}, time.Now()).Wait(ctx)
			return err
		},
	}
	require.True(t, l.Pipelined(), "FinishAsync sends without waiting")
	for _, name := range []string{"Complete", "Finish", "FinishAsync"} {
		key, dep := kvledger.IdempotencyKey(name), kvledger.IdempotencyKey(name+"-dep")
		admitAll(t, ctx, l, key)
		ok, err := l.Admit(ctx, "test", dep, 1, nil, time.Now(), key)
		require.NoError(t, err)
		require.True(t, ok)
		fence, err := l.Claim(ctx, "w", key, "w", time.Hour, time.Now())
		require.NoError(t, err, name)
		require.Len(t, liveLeaseKeys(t, n.JS, leases), 1, name)

		spy.watched, spy.seen = dep, nil
		require.NoError(t, end[name](key, fence), name)
		require.NotEmpty(t, spy.seen, "%s: the walk read the dependent", name)
		for _, keys := range spy.seen {
			require.Empty(t, keys, "%s: the failed claim's lease is gone while its dependents are walked", name)
		}
		require.Empty(t, liveLeaseKeys(t, n.JS, leases), name)
		st, _, err := l.State(ctx, dep)
		require.NoError(t, err)
		require.Equal(t, kvledger.StatusBlocked, st.Status, name)
	}
}
