package kvlock_test

import (
	"testing"

	"github.com/natscoord/natscoord/kvlock"
)

// FuzzKey: Key escapes any non-empty parts into a key ValidateKey accepts, and
// distinct part lists never share a key (the codec is injective).
func FuzzKey(f *testing.F) {
	for _, p := range [][2]string{{"conv", "42"}, {"a.b", "c"}, {"a", "b.c"}, {"", ""}, {"=2E", "."}, {"α", "\xff"}, {"a/b", "-_"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		k := kvlock.Key(a, b)
		if a == "" || b == "" || len(k) > 256 { // 256: kvlock's MaxKeyBytes
			// An empty part makes a key ValidateKey rejects, as documented.
			if (a == "" || b == "" || len(k) > 256) && kvlock.ValidateKey(k) == nil {
				t.Fatalf("Key(%q, %q) = %q accepted", a, b, k)
			}
			return
		}
		if err := kvlock.ValidateKey(k); err != nil {
			t.Fatalf("Key(%q, %q) = %q invalid: %v", a, b, k, err)
		}
		if k2 := kvlock.Key(a + b); k2 == k {
			t.Fatalf("Key(%q,%q) == Key(%q) == %q", a, b, a+b, k)
		}
		if a != b {
			if kvlock.Key(a) == kvlock.Key(b) {
				t.Fatalf("Key(%q) == Key(%q)", a, b)
			}
		}
	})
}
