package kvledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/opstats"
)

func TestWithObserverRecordsWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := opstats.New()
	store := kvledger.NewMemStore()
	l, err := kvledger.New(store, kvledger.WithSource(store.Name()),
		kvledger.WithObserver(kvledger.Observers(kvledger.RecorderObserver(rec), nil)))
	require.NoError(t, err)
	now := time.Now()
	ok, err := l.Admit(ctx, "a", "k", 1, "task", now)
	require.NoError(t, err)
	require.True(t, ok)
	f, err := l.Claim(ctx, "w", "k", "w", time.Minute, now)
	require.NoError(t, err)
	require.NoError(t, l.Complete(ctx, "w", "k", "w", f, kvledger.StatusCompleted, now))
	lbl := func(out string) opstats.Labels {
		return opstats.Labels{Component: "kvledger", Name: store.Name(), Op: "write", Outcome: out}
	}
	require.EqualValues(t, 1, rec.Count(lbl("claimed")))
	require.EqualValues(t, 1, rec.Count(lbl("completed")))

	// Observers of none is nil, which adds no observer rather than
	// failing the Ledger's construction.
	_, err = kvledger.New(nil, kvledger.WithObserver(kvledger.Observers()))
	require.NoError(t, err)
}
