package main

import (
	"encoding/json"
	"strconv"
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

// --under P picks the key P and the keys P followed by "/" (P without a
// trailing "/"): a subset of what --prefix P picks, and never a key that
// continues P's last segment.
func FuzzKeyFilterUnder(f *testing.F) {
	for _, s := range [][2]string{{"etl", "etl/a"}, {"etl/", "etl"}, {"etl", "etl2/a"}, {"etl//", "etl/"}, {"/", "/a"},
		{"schedule/night", "schedule/nightly/2026-12-01T02:00:00Z"}, {"", "x"}, {"a/b", "a/b/c"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, path, key string) {
		if path == "" {
			return // no --under: no key filter
		}
		var under taskFilter
		if err := under.setKey("", path, ""); err != nil {
			require.Empty(t, strings.TrimSuffix(path, "/"), "only an empty path is refused")
			return
		}
		p := strings.TrimSuffix(path, "/")
		picked := under.matchKey(key)
		require.Equal(t, key == p || strings.HasPrefix(key, p+"/"), picked, "under %q, key %q", path, key)
		if picked {
			require.True(t, taskFilter{prefix: p}.matchKey(key), "a subset of --prefix")
		}
		for _, next := range []string{"x", "2", "-"} {
			require.False(t, under.matchKey(p+next), "a continued segment %q", p+next)
		}
	})
}

// FuzzParseRate: parseRate returns an error or a rate, never panics, and
// a rate it returns reads back from its own form.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"3/2s", "100/m", "10/s", "5/h", "1/1h30m", "/", "3/", "/2s", "-1/2s", "3/2", "9999999999999999999/s", "3/2s/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, period, err := parseRate(s)
		if err != nil {
			return
		}
		n2, p2, err := parseRate(strconv.Itoa(n) + "/" + period.String())
		if err != nil || n2 != n || p2 != period {
			t.Fatalf("%q: %d/%v read back as %d/%v, %v", s, n, period, n2, p2, err)
		}
	})
}
