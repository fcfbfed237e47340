package suitecheck

import (
	"errors"
	"fmt"
	"testing"
)

// recorder is a testing.TB whose Fatalf records instead of stopping.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }

func TestAssertionsPassAndFail(t *testing.T) {
	sentinel := errors.New("sentinel")
	cases := []struct {
		name string
		pass func(TB *recorder)
		fail func(TB *recorder)
	}{
		{"NoError", func(r *recorder) { NoError(r, nil) }, func(r *recorder) { NoError(r, sentinel, "op %d", 1) }},
		{"ErrorIs", func(r *recorder) { ErrorIs(r, fmt.Errorf("w: %w", sentinel), sentinel) }, func(r *recorder) { ErrorIs(r, errors.New("x"), sentinel) }},
		{"Equal", func(r *recorder) { Equal(r, []byte("a"), []byte("a")) }, func(r *recorder) { Equal(r, 1, 2) }},
		{"True", func(r *recorder) { True(r, true) }, func(r *recorder) { True(r, false) }},
		{"False", func(r *recorder) { False(r, false) }, func(r *recorder) { False(r, true) }},
		{"Greater", func(r *recorder) { Greater(r, 2, 1) }, func(r *recorder) { Greater(r, uint64(1), 1) }},
		{"Len", func(r *recorder) { Len(r, []int{1, 2}, 2) }, func(r *recorder) { Len(r, map[int]int{}, 1) }},
		{"Empty", func(r *recorder) { Empty(r, ""); Empty(r, []int(nil)); Empty(r, 0) }, func(r *recorder) { Empty(r, []int{1}) }},
		{"ElementsMatch", func(r *recorder) { ElementsMatch(r, []string{"a", "b"}, []string{"b", "a"}) }, func(r *recorder) { ElementsMatch(r, []int{1, 1}, []int{1, 2}) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok := &recorder{TB: t}
			c.pass(ok)
			if ok.failed != "" {
				t.Fatalf("passing case failed: %s", ok.failed)
			}
			bad := &recorder{TB: t}
			c.fail(bad)
			if bad.failed == "" {
				t.Fatal("failing case passed")
			}
		})
	}
}
