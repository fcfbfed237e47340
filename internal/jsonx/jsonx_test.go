package jsonx_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/jsonx"
)

// FuzzScannerValueMatchesEncodingJSON: Scanner.Value declines or decodes
// exactly what encoding/json decodes into an `any`, and never accepts
// what encoding/json refuses.
func FuzzScannerValueMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,"\u003c\n",null,{"b":{}}],"c":true}`, `"é\ud83d\ude00"`, `[]`, `{}`,
		`0`, `-0`, `1e400`, `"\ud800"`, `[1,]`, `{"a":1,"a":2}`, "\"\xff\"", `nul`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := jsonx.NewScanner(data)
		got, ok := d.Value()
		if !ok || !d.Done() {
			return
		}
		var want any
		require.NoError(t, jsonx.Unmarshal(data, &want), "accepted what encoding/json refuses: %q", data)
		require.Equal(t, want, got, "%q", data)

		r := jsonx.NewScanner(data)
		raw, ok := r.RawValue()
		require.True(t, ok)
		require.Equal(t, data, raw)
	})
}

// FuzzAppendValueMatchesEncodingJSON: AppendValue of a decoded value
// writes what json.Marshal writes, or declines; decoded with float64s
// (a caller's Go values) and with json.Number (what kvledger reads
// back). Decoding what it wrote gives the same value again, every
// number with the same text.
func FuzzAppendValueMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"b":[1,-2.5e+3,"<&>\u2028",null,{"a":{}}],"a":true}`, `1e21`, `1e-7`, `"\u0001"`, `[]`,
		`{"id":9007199254740993,"big":12345678901234567890}`, `[-0.0,1E+2,0.10000000000000000001]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v, n any
		if json.Unmarshal(data, &v) == nil {
			if got, ok := jsonx.AppendValue(nil, v, 0); ok {
				want, err := json.Marshal(v)
				require.NoError(t, err)
				require.Equal(t, string(want), string(got))
			}
		}
		if jsonx.Unmarshal(data, &n) != nil {
			return
		}
		got, ok := jsonx.AppendValue(nil, n, 0)
		if !ok {
			return
		}
		want, err := json.Marshal(n)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		var again any
		require.NoError(t, jsonx.Unmarshal(got, &again))
		require.Equal(t, n, again, "%q -> %s", data, got)
	})
}

// TestNumbersRoundTripExactly: integers above 2^53 and beyond uint64,
// and numbers in any notation, come back from Scanner.Value and
// Unmarshal with their text, and AppendValue writes that text again.
func TestNumbersRoundTripExactly(t *testing.T) {
	for _, in := range []string{
		`{"big":12345678901234567890,"id":9007199254740993}`,
		`[-0,1E+2,1.50,0.10000000000000000001,1e400,-9223372036854775809]`,
		`18446744073709551616`,
	} {
		d := jsonx.NewScanner([]byte(in))
		v, ok := d.Value()
		require.True(t, ok && d.Done(), in)
		out, ok := jsonx.AppendValue(nil, v, 0)
		require.True(t, ok)
		require.Equal(t, in, string(out))

		var u any
		require.NoError(t, jsonx.Unmarshal([]byte(in), &u))
		require.Equal(t, v, u)
	}
	require.Error(t, jsonx.Unmarshal([]byte(`{} x`), new(any)))
	require.Error(t, jsonx.Unmarshal([]byte(`1 2`), new(any)))
	require.NoError(t, jsonx.Unmarshal([]byte(" 1 \n"), new(any)))
	require.True(t, jsonx.ValidNumber("-1.5e+7"))
	require.False(t, jsonx.ValidNumber("01"))
	require.False(t, jsonx.ValidNumber("1 "))
}
