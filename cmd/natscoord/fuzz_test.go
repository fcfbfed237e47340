package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

func FuzzParseNeeds(f *testing.F) {
	for _, s := range []string{"", "a", "a,b", " a , b ", "a,,b", ",", "a,a", "self", "x,self", "α,β", "a.b,c d", "\t", "a,b,"} {
		f.Add("self", s)
	}
	f.Fuzz(func(t *testing.T, self, s string) {
		needs, err := parseNeeds(self, s)
		if err != nil {
			require.Nil(t, needs)
			return
		}
		seen := map[kvledger.IdempotencyKey]bool{}
		for _, n := range needs {
			require.NotEmpty(t, n)
			require.Equal(t, strings.TrimSpace(string(n)), string(n))
			require.NotContains(t, string(n), ",")
			require.NotEqual(t, self, string(n))
			require.False(t, seen[n], "duplicate %q", n)
			seen[n] = true
		}
		// Joining and parsing again gives the same list.
		again, err := parseNeeds(self, joinKeys(needs))
		require.NoError(t, err)
		if len(needs) == 0 {
			require.Empty(t, again)
		} else {
			require.Equal(t, needs, again)
		}
	})
}

func FuzzParseStatus(f *testing.F) {
	for _, s := range []string{"completed", "failed", "COMPLETED", " done ", "ok", "fail", "pending", "blocked", "", "complet"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseStatus(s)
		if err != nil {
			require.Empty(t, st)
			return
		}
		require.True(t, st == kvledger.StatusCompleted || st == kvledger.StatusFailed, st)
		again, err := parseStatus(string(st))
		require.NoError(t, err)
		require.Equal(t, st, again)
	})
}

func FuzzParseTask(f *testing.F) {
	for _, s := range []string{"", "null", `{"a":1}`, "[1,2]", `"x"`, "1e400", "{", "{} x", "1 2", "true", `{"a":{"b":[null]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseTask(s)
		if err != nil {
			require.Nil(t, v)
			return
		}
		if v == nil {
			return
		}
		require.True(t, json.Valid([]byte(s)), "accepted %q", s)
		// What the CLI stores re-encodes to JSON that parses to the same value.
		b, err := json.Marshal(v)
		require.NoError(t, err)
		w, err := parseTask(string(b))
		require.NoError(t, err)
		require.Equal(t, v, w)
	})
}
