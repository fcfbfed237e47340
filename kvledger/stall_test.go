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

// On a stalled connection, Ledger calls return within the bound doc.go
// states from the store's OpTimeout (one operation plus a
// read-back), not at the caller's deadline.
func TestStalledConnectionBoundedByOperationTimeout(t *testing.T) {
	n := natstest.WithServer(t)
	const opTimeout = 500 * time.Millisecond
	p, js := natstest.ThroughProxy(t, n, jetstream.WithDefaultTimeout(opTimeout))
	store := newKVStore(t, js, kvledger.KVStoreConfig{})
	require.Equal(t, opTimeout, store.OpTimeout())
	ctx := natstest.Context(t, 60*time.Second)
	l := newLedger(t, store)
	ok, err := l.Admit(ctx, "a", "held", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)
	fence, err := l.Claim(ctx, "w", "held", "w", time.Minute, t0)
	require.NoError(t, err)

	p.Stall(true)
	t.Cleanup(func() { p.Stall(false) })
	bound := 2*opTimeout + 500*time.Millisecond
	long, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for name, call := range map[string]func() error{
		"Admit":    func() error { _, err := l.Admit(long, "a", "new", 1, nil, t0, "held"); return err },
		"Claim":    func() error { _, err := l.Claim(long, "w", "other", "w", time.Minute, t0); return err },
		"Renew":    func() error { return l.Renew(long, "w", "held", "w", fence, time.Minute, t0) },
		"Complete": func() error { return l.Complete(long, "w", "held", "w", fence, kvledger.StatusCompleted, t0) },
		"State":    func() error { _, _, err := l.State(long, "held"); return err },
	} {
		start := time.Now()
		err := call()
		took := time.Since(start)
		t.Logf("%s on a stalled connection: %v after %v (bound %v)", name, err, took, bound)
		require.Error(t, err, name)
		require.Less(t, took, bound, name)
	}
}
