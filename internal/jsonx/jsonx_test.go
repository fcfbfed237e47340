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
		require.NoError(t, json.Unmarshal(data, &want), "accepted what encoding/json refuses: %q", data)
		require.Equal(t, want, got, "%q", data)

		r := jsonx.NewScanner(data)
		raw, ok := r.RawValue()
		require.True(t, ok)
		require.Equal(t, data, raw)
	})
}

// FuzzAppendValueMatchesEncodingJSON: AppendValue of a decoded value
// writes what json.Marshal writes, or declines.
func FuzzAppendValueMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"b":[1,-2.5e+3,"<&>\u2028",null,{"a":{}}],"a":true}`, `1e21`, `1e-7`, `"\u0001"`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		got, ok := jsonx.AppendValue(nil, v, 0)
		if !ok {
			return
		}
		want, err := json.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}
