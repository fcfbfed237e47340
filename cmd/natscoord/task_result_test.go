package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzResultOf: the result is valid JSON of at most limit bytes; text
// output is kept up to the longest prefix whose JSON fits (one more rune
// would not), and is reported cut exactly when it is shorter.
func FuzzResultOf(f *testing.F) {
	f.Add([]byte(strings.Repeat("a", 100)), 100)
	f.Add([]byte("<&>\u2028\xff\x01é😀\n"), 9)
	f.Add([]byte(`{"a": 1}`), 7)
	f.Fuzz(func(t *testing.T, out []byte, limit int) {
		limit = limit % 4096
		if limit < 0 {
			limit = -limit
		}
		res, cut := resultOf(out, limit)
		require.LessOrEqual(t, len(res), limit)
		if res == nil {
			return
		}
		require.True(t, json.Valid(res), "%s", res)
		var compact bytes.Buffer
		if json.Valid(out) && json.Compact(&compact, out) == nil && compact.Len() <= limit {
			require.Equal(t, compact.String(), string(res), "JSON output kept as it is")
			require.False(t, cut)
			return
		}
		var s string
		require.NoError(t, json.Unmarshal(res, &s))
		text := strings.TrimSuffix(string(out), "\n")
		kept := utf8.RuneCountInString(s)
		require.Equal(t, cut, kept < utf8.RuneCountInString(text))
		if cut {
			// One more rune (or invalid byte) of the output would not
			// fit.
			n := 0
			for range kept {
				_, size := utf8.DecodeRuneInString(text[n:])
				n += size
			}
			_, size := utf8.DecodeRuneInString(text[n:])
			more, err := json.Marshal(text[:n+size])
			require.NoError(t, err)
			require.Greater(t, len(more), limit)
		}
	})
}

// TestResultOfKeepsTheLimit: plain text longer than the limit keeps all
// but the two quotes' worth (issue 25 item 19: 49,152 characters of a
// 65,536-byte limit).
func TestResultOfKeepsTheLimit(t *testing.T) {
	res, cut := resultOf([]byte(strings.Repeat("a", 70000)), 65536)
	require.True(t, cut)
	require.Len(t, res, 65536)
	res, cut = resultOf([]byte(strings.Repeat("<", 70000)), 65536)
	require.True(t, cut)
	require.Len(t, res, 2+65534/6*6)
}
