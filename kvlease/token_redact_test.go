package kvlease_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
)

// A token logged through slog (Text and JSON handlers, as an attribute
// and inside a struct) or marshalled inside a struct never shows its
// secret; MarshalText still carries it for a hand-over.
func TestTokenRedactedInSlogAndJSON(t *testing.T) {
	ctx := natstest.Context(t, 20*time.Second)
	l1, tok, text, secretHex := exportedToken(t, ctx, "slog")

	type request struct {
		ID    string
		Token kvlease.Token[string]
	}
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		log := slog.New(h)
		log.Info("handing over", "token", tok)
		log.Info("handing over", "token", &tok)
		log.Info("handing over", "req", request{ID: "r1", Token: tok})
		log.Info("handing over", slog.Any("token", tok))
	}
	b, err := json.Marshal(request{ID: "r1", Token: tok})
	require.NoError(t, err)
	buf.Write(b)

	out := buf.String()
	require.NotContains(t, out, secretHex)
	require.NotContains(t, out, string(text[len("kvlease1:"):]))
	require.Contains(t, out, "REDACTED")
	require.Contains(t, out, "fence")

	// The explicit hand-over still works.
	var back kvlease.Token[string]
	require.NoError(t, back.UnmarshalText(text))
	g2, err := l1.Restore(ctx, back)
	require.NoError(t, err)
	require.NoError(t, g2.Release(ctx))
}
