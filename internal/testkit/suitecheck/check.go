// Package suitecheck holds the few assertions that natscoord's public test
// suites (kvledger/storetest and the Locker conformance suite) use, so that
// those packages depend on nothing but the standard library: a user who
// runs a suite against a store of their own does not pull a test framework
// into their module.
//
// Each function fails the test at once (t.Fatalf), as testify's require
// does, with the optional message formatted like fmt.Sprintf when its
// first element is a string.
package suitecheck

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// NoError fails t when err is not nil.
func NoError(t testing.TB, err error, msg ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v%s", err, suffix(msg))
	}
}

// ErrorIs fails t when errors.Is(err, target) is false.
func ErrorIs(t testing.TB, err, target error, msg ...any) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v is not %v%s", err, target, suffix(msg))
	}
}

// Equal fails t when want and got differ (bytes.Equal for byte slices,
// reflect.DeepEqual otherwise).
func Equal(t testing.TB, want, got any, msg ...any) {
	t.Helper()
	if !equal(want, got) {
		t.Fatalf("not equal:\n want: %#v\n  got: %#v%s", want, got, suffix(msg))
	}
}

// True fails t when v is false.
func True(t testing.TB, v bool, msg ...any) {
	t.Helper()
	if !v {
		t.Fatalf("want true%s", suffix(msg))
	}
}

// False fails t when v is true.
func False(t testing.TB, v bool, msg ...any) {
	t.Helper()
	if v {
		t.Fatalf("want false%s", suffix(msg))
	}
}

// Greater fails t unless a > b.
func Greater[T cmp.Ordered](t testing.TB, a, b T, msg ...any) {
	t.Helper()
	if !(a > b) {
		t.Fatalf("want %v > %v%s", a, b, suffix(msg))
	}
}

// Len fails t unless obj (a slice, map, string, array or channel) has n
// elements.
func Len(t testing.TB, obj any, n int, msg ...any) {
	t.Helper()
	v := reflect.ValueOf(obj)
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array, reflect.Chan:
		if v.Len() != n {
			t.Fatalf("want length %d, got %d: %#v%s", n, v.Len(), obj, suffix(msg))
		}
	default:
		t.Fatalf("%T has no length%s", obj, suffix(msg))
	}
}

// Empty fails t unless obj is the zero value or has no elements.
func Empty(t testing.TB, obj any, msg ...any) {
	t.Helper()
	if obj == nil {
		return
	}
	v := reflect.ValueOf(obj)
	switch v.Kind() {
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array, reflect.Chan:
		if v.Len() == 0 {
			return
		}
	default:
		if v.IsZero() {
			return
		}
	}
	t.Fatalf("want empty, got %#v%s", obj, suffix(msg))
}

// ElementsMatch fails t unless the slices a and b hold the same elements,
// in any order, each as often.
func ElementsMatch(t testing.TB, a, b any, msg ...any) {
	t.Helper()
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	if av.Kind() != reflect.Slice || bv.Kind() != reflect.Slice {
		t.Fatalf("ElementsMatch takes slices, got %T and %T%s", a, b, suffix(msg))
	}
	used := make([]bool, bv.Len())
next:
	for i := range av.Len() {
		for j := range bv.Len() {
			if !used[j] && equal(av.Index(i).Interface(), bv.Index(j).Interface()) {
				used[j] = true
				continue next
			}
		}
		t.Fatalf("elements differ:\n a: %#v\n b: %#v%s", a, b, suffix(msg))
	}
	if av.Len() != bv.Len() {
		t.Fatalf("elements differ:\n a: %#v\n b: %#v%s", a, b, suffix(msg))
	}
}

func equal(want, got any) bool {
	wb, ok1 := want.([]byte)
	gb, ok2 := got.([]byte)
	if ok1 && ok2 {
		return bytes.Equal(wb, gb)
	}
	return reflect.DeepEqual(want, got)
}

func suffix(msg []any) string {
	if len(msg) == 0 {
		return ""
	}
	if f, ok := msg[0].(string); ok {
		return ": " + fmt.Sprintf(f, msg[1:]...)
	}
	return ": " + fmt.Sprint(msg...)
}

// Zero fails t unless v is its type's zero value.
func Zero(t testing.TB, v any, msg ...any) {
	t.Helper()
	if v != nil && !reflect.ValueOf(v).IsZero() {
		t.Fatalf("want the zero value, got %#v%s", v, suffix(msg))
	}
}
