package kvledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestKVStoreUnknownAdmitIsSettledByItsOwnWrite: an Admit whose insert has
// an unknown outcome is settled by finding that very write on the key,
// not by finding a record with the same bytes. A retry with the same
// arguments (actor, sequence, now) encodes a record identical to the one
// an earlier, acknowledged Admit stored; taking that record for its own
// reported the retry as admitted (a second true for one sequence) although
// its write never reached the server (partition soak, one-way loss).
func TestKVStoreUnknownAdmitIsSettledByItsOwnWrite(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	l, err := kvledger.New(s)
	require.NoError(t, err)

	ok, err := l.Admit(ctx, "a", "k", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)
	before, found, err := s.Load(ctx, "k")
	require.NoError(t, err)
	require.True(t, found)

	// The same call again, its write's outcome unknown: the context ends
	// before any answer (here: before the publish leaves).
	gone, cancel := context.WithCancel(ctx)
	cancel()
	ok, err = l.Admit(gone, "a", "k", 1, nil, t0)
	require.False(t, ok, "the earlier record is not this call's write (err=%v)", err)

	after, found, err := s.Load(ctx, "k")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, before.Rev, after.Rev, "nothing was written")

	// Acknowledged writes still settle as before.
	ok, err = l.Admit(ctx, "a", "k", 1, nil, t0)
	require.NoError(t, err)
	require.False(t, ok, "sequence 1 is already admitted")
	ok, err = l.Admit(ctx, "a", "k2", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)
}
