package natstest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Feed is an ordered feed of a bucket's watch (kvx.Feed, kvlease.Feed),
// by the type of its items (this kit imports no natscoord package that
// tests it).
type Feed[T any] interface {
	Ready() <-chan struct{}
	Take() ([]T, error)
}

// TakeFeed returns the next items of f, waiting up to timeout for some;
// the test fails when none come or f ends.
func TakeFeed[T any](t testing.TB, f Feed[T], timeout time.Duration) []T {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case <-f.Ready():
		case <-deadline:
			t.Fatal("no feed items")
		}
		items, err := f.Take()
		require.NoError(t, err)
		if len(items) > 0 {
			return items
		}
	}
}
