package kvlease_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

func TestExportRestoreAcrossManagers(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)

	g1, ok, err := l1.TryAcquire(ctx, "job-7", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	tok, err := l1.Export(g1)
	require.NoError(t, err)
	require.ErrorIs(t, g1.Err(), kvlease.ErrExported)
	require.ErrorIs(t, context.Cause(g1.Context()), kvlease.ErrExported)
	require.NoError(t, g1.Release(ctx), "an exported guard releases nothing")
	_, held, err := l2.Holder(ctx, "job-7")
	require.NoError(t, err)
	require.True(t, held, "export keeps the lease")

	text, err := tok.MarshalText()
	require.NoError(t, err)
	var tok2 kvlease.Token[string]
	require.NoError(t, tok2.UnmarshalText(text))
	require.Equal(t, tok.LeaseKey(), tok2.LeaseKey())

	g2, err := l2.Restore(ctx, tok2)
	require.NoError(t, err)
	require.NoError(t, g2.Err())
	require.Greater(t, g2.Fence(), g1.Fence())
	h, held, err := l2.Holder(ctx, "job-7")
	require.NoError(t, err)
	require.True(t, held)
	require.Equal(t, "two", h.ID)

	_, err = l2.Restore(ctx, tok2)
	require.ErrorIs(t, err, kvlease.ErrLost, "a token is single use")
	_, err = l1.Restore(ctx, tok)
	require.ErrorIs(t, err, kvlease.ErrLost)
	require.NoError(t, g2.Release(ctx))
	_, err = l1.Restore(ctx, tok)
	require.ErrorIs(t, err, kvlease.ErrLost, "released lease")
	require.EqualValues(t, 1, m1.Stats().Exported)
	require.EqualValues(t, 1, m2.Stats().Restored)
}

func TestConcurrentRestoreHasOneWinner(t *testing.T) {
	m1, m2 := pair(t)
	l1, l2 := bind(t, jobs, m1), bind(t, jobs, m2)
	ctx := natstest.Context(t, 20*time.Second)
	g, ok, err := l1.TryAcquire(ctx, "race", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	tok, err := l1.Export(g)
	require.NoError(t, err)

	var wg sync.WaitGroup
	guards := make(chan *kvlease.Guard, 6)
	for i := range 6 {
		l := l1
		if i%2 == 1 {
			l = l2
		}
		wg.Go(func() {
			g, err := l.Restore(ctx, tok)
			if err != nil {
				require.ErrorIs(t, err, kvlease.ErrLost)
				return
			}
			guards <- g
		})
	}
	wg.Wait()
	close(guards)
	n := 0
	for g := range guards {
		n++
		require.NoError(t, g.Release(ctx))
	}
	require.Equal(t, 1, n)
}

func TestTokenRedactsSecret(t *testing.T) {
	ctx := natstest.Context(t, 20*time.Second)
	l1, tok, text, secretHex := exportedToken(t, ctx, "secret")

	for _, s := range []string{
		tok.String(), tok.GoString(), fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s %q %x", tok, tok, tok, tok, tok, tok),
		fmt.Sprintf("%v", &tok), fmt.Sprintf("%+v", struct{ T kvlease.Token[string] }{tok}),
	} {
		require.NotContains(t, s, secretHex)
		require.NotContains(t, s, string(text[9:]))
		require.Contains(t, s, "REDACTED")
	}
	// The bucket holds only a hash of the secret.
	h, _, err := l1.Holder(ctx, "secret")
	require.NoError(t, err)
	require.NotContains(t, h.OwnerHash, secretHex)
	g2, err := l1.Restore(ctx, tok)
	require.NoError(t, err)
	require.NoError(t, g2.Release(ctx))
}

// exportedToken holds jobs lease key on a fresh manager and exports its
// token: the leases, the token, its text form and the secret in hex.
func exportedToken(t *testing.T, ctx context.Context, key string) (kvlease.Leases[string], kvlease.Token[string], []byte, string) {
	t.Helper()
	m1, _ := pair(t)
	l1 := bind(t, jobs, m1)
	g, ok, err := l1.TryAcquire(ctx, key, 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	tok, err := l1.Export(g)
	require.NoError(t, err)
	text, err := tok.MarshalText()
	require.NoError(t, err)
	return l1, tok, text, secretOf(t, text)
}

// secretOf digs the hex secret out of a marshalled token.
func secretOf(t *testing.T, text []byte) string {
	t.Helper()
	var tok kvlease.Token[string]
	require.NoError(t, tok.UnmarshalText(text))
	raw := decodeTokenJSON(t, text)
	i := strings.Index(raw, `"s":"`)
	require.GreaterOrEqual(t, i, 0)
	s := raw[i+5 : i+5+64]
	_, err := hex.DecodeString(s)
	require.NoError(t, err)
	return s
}

func TestTokenFromAnotherFamily(t *testing.T) {
	m1, _ := pair(t)
	l1 := bind(t, jobs, m1)
	other := bind(t, kvlease.Define[string]("other", kvlease.StringCodec{}), m1)
	ctx := natstest.Context(t, 20*time.Second)
	g, ok, err := l1.TryAcquire(ctx, "x", 5*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = other.Export(g)
	require.ErrorIs(t, err, kvlease.ErrForeignGuard)
	tok, err := l1.Export(g)
	require.NoError(t, err)
	text, err := tok.MarshalText()
	require.NoError(t, err)
	var ot kvlease.Token[string]
	require.NoError(t, ot.UnmarshalText(text))
	_, err = other.Restore(ctx, ot)
	require.ErrorIs(t, err, kvlease.ErrInvalidToken)
	_, err = l1.Restore(ctx, kvlease.Token[string]{})
	require.ErrorIs(t, err, kvlease.ErrInvalidToken)
	_, err = (kvlease.Token[string]{}).MarshalText()
	require.ErrorIs(t, err, kvlease.ErrInvalidToken)
	g2, err := l1.Restore(ctx, tok)
	require.NoError(t, err)
	require.NoError(t, g2.Release(ctx))
}
