package kvlease

import (
	"strings"
	"testing"
)

// FuzzDecodeValue: a lease value read from the bucket may have been
// written by anyone. Decoding it returns a Holder or an error, never a
// panic, and garbage never counts as owned by anyone.
func FuzzDecodeValue(f *testing.F) {
	for _, s := range []string{
		"", "null", "{}", "[]", "not json",
		`{"holder":"h","host":"x","pid":1,"acquired":"2026-01-01T00:00:00Z","ttl_ms":2000,"owner":"` + strings.Repeat("ab", 32) + `"}`,
		`{"owner":1}`, `{"ttl_ms":"x"}`, `{"acquired":"yesterday"}`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	hash := strings.Repeat("ab", 32)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeValue(b)
		if err != nil && h != (Holder{}) {
			t.Fatalf("error %v with a non-zero holder %+v", err, h)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "kvlease: ") {
			t.Fatalf("error without package prefix: %v", err)
		}
		if ownedBy(b, hash) && h.OwnerHash != hash {
			t.Fatalf("ownedBy true for %q", b)
		}
		_ = ownedBy(b, "")
	})
}
