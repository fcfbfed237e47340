package kvx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// TestWriteAsIdentifiesTheWrite: the id of UpdateAs, AcquireAs and DeleteAs
// is stored with the message and read back from the leader, a repeated
// publish of one id lands once (R3 answers it with the original
// acknowledgment), and AcquireAs whose landed attempt was answered with a
// stale refusal (a deposed stream leader's, imitated here by a second
// responder on the key's subject) reports its own write, not "held".
func TestWriteAsIdentifiesTheWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := natstest.WithCluster(t, 3)
	b := openBucket(t, c.JS, 3)
	ctx := natstest.Context(t, 30*time.Second)

	r1, err := b.UpdateAs(ctx, "k", []byte("v"), 0, 0, "w1", nil)
	require.NoError(t, err)
	e, err := b.Last(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "w1", e.MsgID)
	require.Equal(t, r1, e.Revision)

	// The same attempt sent again: one message, the original revision.
	again, err := b.UpdateAs(ctx, "k", []byte("v"), 0, 0, "w1", nil)
	require.NoError(t, err)
	require.Equal(t, r1, again)

	d, err := b.DeleteAs(ctx, "k", r1, 0, "d1")
	require.NoError(t, err)
	e, err = b.Last(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, kvx.OpDelete, e.Op)
	require.Equal(t, "d1", e.MsgID)
	require.Equal(t, d, e.Revision)

	sub := natstest.RefuseWrites(t, c.JS.Conn(), "$KV.t.a")
	rev, _, err := b.AcquireAs(ctx, "a", []byte("x"), 0, 0, "a1", nil)
	require.NoError(t, sub.Unsubscribe())
	require.NoError(t, err, "our own write is not a holder")
	e, err = b.Last(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "a1", e.MsgID)
	require.Equal(t, e.Revision, rev)
}

// A stream leader cut off in a minority refuses writes from its own state
// while its reads show the key free at the revision the write expected.
// Imitated: the bucket's stream no longer captures the key's subject, and
// a second responder refuses every publish as "wrong last sequence".
// AcquireAs must call that unsettled (an unknown outcome), not contention.
func TestAcquireRefusedWhileTheKeyReadsFreeIsUnsettled(t *testing.T) {
	n := natstest.WithServer(t)
	b := openBucket(t, n.JS, 1)
	ctx := natstest.Context(t, 30*time.Second)
	natstest.CutOff(t, n, b.Name())

	_, cur, err := b.AcquireAs(ctx, "k", []byte("v"), 0, 0, "w1", nil)
	require.ErrorIs(t, err, kvx.ErrUnsettled)
	require.False(t, kvx.IsConflict(err), "not contention: nobody else wrote")
	require.True(t, kvx.OutcomeUnknown(err))
	require.Zero(t, cur.Revision)
}
