// Package heapx is a typed binary min-heap with optional position
// tracking: the one priority queue behind kvlease's renewal scheduler,
// internal/clock's manual clock (kvlock.ManualClock) and the task
// runtime's timers, which before it each carried their own
// container/heap adapter.
package heapx

import "container/heap"

// Heap orders items by Less; the smallest is at index 0. When SetIndex is
// set it is told every item's new position (and -1 when it leaves), so a
// caller can Fix or Remove an item it holds in O(log n). The zero Heap is
// not usable: build it with New.
type Heap[T any] struct {
	h adapter[T]
}

// New returns an empty heap ordered by less. setIndex may be nil.
func New[T any](less func(a, b T) bool, setIndex func(item T, i int)) *Heap[T] {
	return &Heap[T]{h: adapter[T]{less: less, setIndex: setIndex}}
}

// Len returns the number of items.
func (h *Heap[T]) Len() int { return len(h.h.items) }

// Peek returns the smallest item; ok is false when the heap is empty.
func (h *Heap[T]) Peek() (item T, ok bool) {
	if len(h.h.items) == 0 {
		return item, false
	}
	return h.h.items[0], true
}

// Push adds item.
func (h *Heap[T]) Push(item T) { heap.Push(&h.h, item) }

// Pop removes and returns the smallest item; the heap must not be empty.
func (h *Heap[T]) Pop() T { return heap.Pop(&h.h).(T) }

// Fix restores the order after the item at index i changed.
func (h *Heap[T]) Fix(i int) { heap.Fix(&h.h, i) }

// Remove removes and returns the item at index i.
func (h *Heap[T]) Remove(i int) T { return heap.Remove(&h.h, i).(T) }

// Clear empties the heap, telling SetIndex that every item left.
func (h *Heap[T]) Clear() {
	if h.h.setIndex != nil {
		for _, it := range h.h.items {
			h.h.setIndex(it, -1)
		}
	}
	clear(h.h.items)
	h.h.items = h.h.items[:0]
}

// adapter is the container/heap.Interface view of the items.
type adapter[T any] struct {
	items    []T
	less     func(a, b T) bool
	setIndex func(T, int)
}

func (a *adapter[T]) Len() int           { return len(a.items) }
func (a *adapter[T]) Less(i, j int) bool { return a.less(a.items[i], a.items[j]) }
func (a *adapter[T]) Swap(i, j int) {
	a.items[i], a.items[j] = a.items[j], a.items[i]
	if a.setIndex != nil {
		a.setIndex(a.items[i], i)
		a.setIndex(a.items[j], j)
	}
}
func (a *adapter[T]) Push(x any) {
	it := x.(T)
	if a.setIndex != nil {
		a.setIndex(it, len(a.items))
	}
	a.items = append(a.items, it)
}
func (a *adapter[T]) Pop() any {
	n := len(a.items) - 1
	it := a.items[n]
	var zero T
	a.items[n] = zero
	a.items = a.items[:n]
	if a.setIndex != nil {
		a.setIndex(it, -1)
	}
	return it
}
