package dashboard

import (
	"sync"
)

// ring keeps the last n items of a stream, oldest first.
type ring[T any] struct {
	mu    sync.Mutex
	items []T
	next  int
	full  bool
}

func newRing[T any](n int) *ring[T] { return &ring[T]{items: make([]T, n)} }

func (r *ring[T]) add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items[r.next] = v
	r.next = (r.next + 1) % len(r.items)
	if r.next == 0 {
		r.full = true
	}
}

// all returns the items, oldest first.
func (r *ring[T]) all() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]T(nil), r.items[:r.next]...)
	}
	return append(append([]T(nil), r.items[r.next:]...), r.items[:r.next]...)
}

// newest returns up to n items, newest first (all of them when n <= 0).
func (r *ring[T]) newest(n int) []T {
	all := r.all()
	if n <= 0 || n > len(all) {
		n = len(all)
	}
	out := make([]T, 0, n)
	for i := len(all) - 1; len(out) < n; i-- {
		out = append(out, all[i])
	}
	return out
}
