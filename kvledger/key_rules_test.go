package kvledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// TestAdmissionRefusesControlCharacters: a key or need holding a control
// character is refused by every admission path before anything is
// written (issue 25 item 18: a NUL key was admitted and the runtime then
// failed the task for good, since an environment variable cannot hold
// NUL). Printable keys of any script still pass.
func TestAdmissionRefusesControlCharacters(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	l, err := kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{}))
	require.NoError(t, err)

	for _, k := range []kvledger.IdempotencyKey{"a\x00b", "line\n", "tab\there", "esc\x1b[2J", "del\x7f", "csi\u009b"} {
		ok, err := l.Admit(ctx, "a", k, 1, nil, t0)
		require.ErrorIs(t, err, kvledger.ErrInvalidState, "%q", k)
		require.False(t, ok)
		require.Contains(t, err.Error(), "control character")
		_, err = l.Submit(ctx, "a", kvledger.Submission{Key: k, Seq: 1, Now: t0})
		require.ErrorIs(t, err, kvledger.ErrInvalidState, "%q", k)
		_, err = l.AdmitMany(ctx, "a", []kvledger.Submission{{Key: "fine1", Seq: 1, Now: t0}, {Key: k, Seq: 1, Now: t0}, {Key: "fine2", Seq: 1, Now: t0}})
		require.ErrorIs(t, err, kvledger.ErrInvalidState, "%q", k)
		_, found, err := l.State(ctx, k)
		require.NoError(t, err)
		require.False(t, found, "nothing written for %q", k)
	}
	_, err = l.Admit(ctx, "a", "ok", 1, nil, t0, "need\x00")
	require.ErrorIs(t, err, kvledger.ErrInvalidState)
	err = l.Restore(ctx, kvledger.Snapshot{Tasks: []kvledger.TaskState{{Key: "r\x00", Status: kvledger.StatusPending, Sequence: 1}}})
	require.ErrorIs(t, err, kvledger.ErrInvalidState)

	for _, k := range []kvledger.IdempotencyKey{"a b.c", "ü→日本", "x\u2028y", "emoji😀"} {
		ok, err := l.Admit(ctx, "a", k, 1, nil, t0)
		require.NoError(t, err, "%q", k)
		require.True(t, ok)
	}
}

// TestLeaseIsBounded: Claim, Renew, Takeover, ClaimIfReady and ClaimNext
// refuse a lease above MaxLease (kvlease's 24h) with ErrInvalidLease
// and write nothing; MaxLease itself is taken (issue 25 item 13: a
// 2562047h claim held its task until 2319).
func TestLeaseIsBounded(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	l, err := kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{}))
	require.NoError(t, err)
	ok, err := l.Admit(ctx, "a", "k", 1, nil, t0)
	require.NoError(t, err)
	require.True(t, ok)

	long := kvledger.MaxLease + time.Second
	_, err = l.Claim(ctx, "w", "k", "w", 2562047*time.Hour, t0)
	require.ErrorIs(t, err, kvledger.ErrInvalidLease)
	require.Contains(t, err.Error(), "above MaxLease")
	_, err = l.ClaimIfReady(ctx, "w", "k", "w", long, t0)
	require.ErrorIs(t, err, kvledger.ErrInvalidLease)
	_, err = l.ClaimNext(ctx, "w", "w", long, t0)
	require.ErrorIs(t, err, kvledger.ErrInvalidLease)
	s, _, err := l.State(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusPending, s.Status, "nothing written")

	f, err := l.Claim(ctx, "w", "k", "w", kvledger.MaxLease, t0)
	require.NoError(t, err)
	require.ErrorIs(t, l.Renew(ctx, "w", "k", "w", f, long, t0), kvledger.ErrInvalidLease)
	_, err = l.Takeover(ctx, "x", "k", "x", long, t0.Add(48*time.Hour))
	require.ErrorIs(t, err, kvledger.ErrInvalidLease)
	s, _, err = l.State(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, t0.Add(kvledger.MaxLease), s.LeaseUntil.UTC())
}
