package kvlease

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The hand-written encoder must write exactly what encoding/json writes
// for the same Holder, so every reader (older versions, the CLI, nats kv
// get) sees the same value.
func TestAppendValueMatchesJSON(t *testing.T) {
	owner := strings.Repeat("0f", 32)
	for _, h := range []Holder{
		{ID: "h", Host: "x", PID: 1},
		{ID: `quote " back \ slash`, Host: "<html>&", PID: 99999},
		{ID: "ünïcode ☃", Host: "tab\tnew\nline", PID: 0},
		{ID: "bad utf8 \xff", Host: "", PID: -1},
		{ID: "w", Host: "x", PID: 2, Info: `{"kinds":["<mail>","a\"b"]}`},
		{ID: "w", Host: "x", PID: 3, Info: "bad utf8 \xff \u2028"},
	} {
		at := time.Date(2026, 11, 29, 15, 4, 5, 123456000, time.UTC)
		for _, ttl := range []time.Duration{time.Second, 1500 * time.Millisecond, MaxTTL} {
			want, err := json.Marshal(Holder{ID: h.ID, Host: h.Host, PID: h.PID, Info: h.Info, Acquired: at, TTLMillis: ttl.Milliseconds(), OwnerHash: owner})
			require.NoError(t, err)
			got := appendValue(nil, valuePrefix(h.ID, h.Host, h.PID), h.Info, at, ttl, owner)
			require.Equal(t, string(want), string(got))
			ms, o, ok := valueTail(got)
			require.True(t, ok)
			require.Equal(t, ttl.Milliseconds(), ms)
			require.Equal(t, owner, string(o))
			require.True(t, ownedBy(got, owner))
			id, err := HolderID(got)
			require.NoError(t, err)
			dec, err := decodeValue(got)
			require.NoError(t, err)
			require.Equal(t, dec.ID, id)
			require.False(t, ownedBy(got, strings.Repeat("0e", 32)))
		}
	}
}

func TestValueTailRefusesOtherLayouts(t *testing.T) {
	owner := strings.Repeat("ab", 32)
	for _, s := range []string{
		"", "{}", `{"owner":"` + owner + `"}`,
		`{"ttl_ms":,"owner":"` + owner + `"}`,
		`{"ttl_ms":-5,"owner":"` + owner + `"}`,
		`{"ttl_ms":5,"owner":"` + strings.Repeat("AB", 32) + `"}`,
		`{"ttl_ms":5,"owner":"aaaa","OWNER":"` + strings.Repeat("b", 64-len(`aaaa","OWNER":"`)) + `"}`,
	} {
		_, _, ok := valueTail([]byte(s))
		require.False(t, ok, "%s", s)
	}
}

// FuzzAppendValue: for any holder id, host, pid, time and TTL the encoder
// agrees with encoding/json, and the tail reader with the full decoder.
func FuzzAppendValue(f *testing.F) {
	f.Add("h", "host", 1, "", int64(0), int64(2000))
	f.Add(`"\`, "<&>", -7, `{"kinds":["a"]}`, int64(1e18), int64(1))
	f.Add("\xff\x00", "\u2028", 1<<30, "\xfe", int64(-1), int64(0))
	owner := strings.Repeat("9a", 32)
	f.Fuzz(func(t *testing.T, id, host string, pid int, info string, nanos, ttlMs int64) {
		at := time.Unix(0, nanos).UTC()
		if ttlMs < 0 {
			ttlMs = -ttlMs
		}
		ttl := time.Duration(ttlMs%int64(MaxTTL/time.Millisecond)) * time.Millisecond
		want, err := json.Marshal(Holder{ID: id, Host: host, PID: pid, Info: info, Acquired: at, TTLMillis: ttl.Milliseconds(), OwnerHash: owner})
		require.NoError(t, err)
		got := appendValue(nil, valuePrefix(id, host, pid), info, at, ttl, owner)
		require.Equal(t, string(want), string(got))
		ms, o, ok := valueTail(got)
		require.True(t, ok)
		require.Equal(t, ttl.Milliseconds(), ms)
		require.Equal(t, owner, string(o))
	})
}

// FuzzValueTail: on any bytes, whenever both the tail reader and the full
// decoder accept a value they agree.
func FuzzValueTail(f *testing.F) {
	owner := strings.Repeat("ab", 32)
	f.Add([]byte(`{"holder":"h","ttl_ms":2000,"owner":"` + owner + `"}`))
	f.Add([]byte(`{"ttl_ms":1,"owner":"x","ttl_ms":5,"owner":"` + owner + `"}`))
	f.Add([]byte(`garbage,"ttl_ms":5,"owner":"` + owner + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, o, ok := valueTail(b)
		h, err := decodeValue(b)
		if ok && err == nil {
			require.Equal(t, h.TTLMillis, ms)
			require.Equal(t, h.OwnerHash, string(o))
		}
		if ownedBy(b, owner) {
			require.NoError(t, err)
			require.Equal(t, owner, h.OwnerHash)
		}
	})
}

// HolderID reads the id from the value's head only when no escape is
// involved, and otherwise agrees with the full decode, errors included.
func TestHolderIDFastPath(t *testing.T) {
	owner := strings.Repeat("0f", 32)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	v := appendValue(nil, valuePrefix("worker-1", "host", 7), "", at, time.Second, owner)
	id, ok := valueHolderID(v)
	require.True(t, ok)
	require.Equal(t, "worker-1", id)
	for _, h := range []string{`q"uote`, "<html>", "bad \xff", "tab\t"} {
		_, ok := valueHolderID(appendValue(nil, valuePrefix(h, "host", 7), "", at, time.Second, owner))
		require.False(t, ok, h)
	}
	for _, bad := range []string{"", "{}", `{"holder":"x","host":"h"}`, `{"holder":"x"` + string(v[len(`{"holder":"worker-1"`):])} {
		_, err := HolderID([]byte(bad))
		_, derr := decodeValue([]byte(bad))
		require.Equal(t, derr != nil, err != nil, bad)
	}
}
