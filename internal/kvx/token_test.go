package kvx_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
)

func TestEncodeToken(t *testing.T) {
	for in, want := range map[string]string{
		"abc":       "abc",
		"a.b":       "a=2Eb",
		"a=b":       "a=3Db",
		"user@x":    "user=40x",
		"ä":         "=C3=A4",
		"a b*>":     "a=20b=2A=3E",
		"A-Z_0/9":   "A-Z_0/9",
		"..":        "=2E=2E",
		"tab\there": "tab=09here",
	} {
		got := kvx.EncodeToken(in)
		require.Equal(t, want, got, in)
		require.True(t, kvx.ValidKey(got), got)
		back, err := kvx.DecodeToken(got)
		require.NoError(t, err)
		require.Equal(t, in, back)
	}
	for _, bad := range []string{"a.b", "=2", "=2e", "=41", "a b", "=G0"} {
		_, err := kvx.DecodeToken(bad)
		require.ErrorIs(t, err, kvx.ErrInvalidKey, bad)
	}
}

func FuzzToken(f *testing.F) {
	for _, s := range []string{"", "a", "a.b", "=", "=3D", "ä", "\x00\xff", "a=2Eb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := kvx.EncodeToken(s)
		back, err := kvx.DecodeToken(enc)
		require.NoError(t, err)
		require.Equal(t, s, back)
		if s != "" {
			require.True(t, kvx.ValidKey(enc))
		}
		// Decoding arbitrary input never panics, and what it accepts
		// round-trips to the same token.
		if dec, err := kvx.DecodeToken(s); err == nil {
			require.Equal(t, s, kvx.EncodeToken(dec))
		}
	})
}
