package kvledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// A key past the control line or a payload past max_payload is refused
// before sending, with an error naming the limit, and the connection
// stays usable.
func TestAdmitRefusesOversizedRecords(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	s := newKVStore(t, n.JS, kvledger.KVStoreConfig{})
	l := newLedger(t, s)

	long := kvledger.IdempotencyKey(strings.Repeat("k", 4096))
	_, err := l.Admit(ctx, "a", long, 1, nil, t0)
	require.ErrorIs(t, err, kvledger.ErrTooLarge)
	require.Contains(t, err.Error(), "the limit is")
	_, err = l.Admit(ctx, "a", "dep", 1, nil, t0, long)
	require.ErrorIs(t, err, kvledger.ErrTooLarge, "a need too long for the index")

	big := strings.Repeat("x", int(n.NC.MaxPayload())+1)
	_, err = l.Admit(ctx, "a", "big", 1, big, t0)
	require.ErrorIs(t, err, kvledger.ErrTooLarge)
	require.Contains(t, err.Error(), "max_payload")

	require.True(t, n.NC.IsConnected())
	ok, err := l.Admit(ctx, "a", "small", 1, "fine", t0)
	require.NoError(t, err, "the connection is still usable")
	require.True(t, ok)
	_, found, err := l.State(ctx, "big")
	require.NoError(t, err)
	require.False(t, found)
}
