package kvlease_test

import (
	"encoding/base64"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlease"
)

func FuzzStringCodec(f *testing.F) {
	for _, s := range []string{"a", "a.b", "x y", "=41", "α", "*", ">", "\x00", "-_/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := kvlease.StringCodec{}
		enc, err := c.Encode(s)
		if s == "" {
			require.ErrorIs(t, err, kvlease.ErrInvalidKey)
			return
		}
		require.NoError(t, err)
		dec, err := c.Decode(enc)
		require.NoError(t, err)
		require.Equal(t, s, dec)
	})
}

func FuzzInt64Codec(f *testing.F) {
	for _, s := range []string{"0", "-1", "42", "+1", "01", "-0", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "x", ""} {
		f.Add(s, int64(len(s)))
	}
	f.Add("1", int64(math.MinInt64))
	f.Add("1", int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, s string, n int64) {
		c := kvlease.Int64Codec{}
		enc, err := c.Encode(n)
		require.NoError(t, err)
		back, err := c.Decode(enc)
		require.NoError(t, err)
		require.Equal(t, n, back)
		if v, err := c.Decode(s); err == nil {
			again, err := c.Encode(v)
			require.NoError(t, err)
			require.Equal(t, s, again, "only canonical decimal decodes")
		} else {
			require.ErrorIs(t, err, kvlease.ErrInvalidKey)
		}
	})
}

func FuzzTokenUnmarshalText(f *testing.F) {
	valid := "kvlease1:" + base64.RawURLEncoding.EncodeToString([]byte(
		`{"f":"jobs","k":"jobs.a=2Eb","r":7,"t":5000,"s":"`+strings.Repeat("ab", 32)+`"}`))
	for _, s := range []string{
		valid, "", "kvlease1:", "kvlease1:e30", "kvlease2:" + valid[9:], valid + "A", valid[:len(valid)-3],
		"kvlease1:" + base64.RawURLEncoding.EncodeToString([]byte(`{"f":"jobs","k":"other.a","r":7,"t":5000,"s":"00"}`)),
		"kvlease1:" + base64.RawURLEncoding.EncodeToString([]byte(`{"f":"jobs","k":"jobs.a","r":7,"t":-9223372036854775808,"s":"00"}`)),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		var tok kvlease.Token[string]
		if err := tok.UnmarshalText(text); err != nil {
			require.ErrorIs(t, err, kvlease.ErrInvalidToken)
			require.True(t, tok.IsZero(), "a failed decode leaves the token unchanged")
			return
		}
		require.NoError(t, kvlease.ValidateTTL(tok.TTL()))
		require.NotZero(t, tok.Fence())
		require.True(t, strings.HasPrefix(tok.LeaseKey(), string(tok.Family())+"."))
		out, err := tok.MarshalText()
		require.NoError(t, err)
		var again kvlease.Token[string]
		require.NoError(t, again.UnmarshalText(out))
		require.Equal(t, tok.String(), again.String())
		require.Contains(t, tok.String(), "REDACTED")
	})
}
