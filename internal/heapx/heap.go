// Package heapx is a typed binary min-heap with optional position
// tracking: the one priority queue behind kvlease's renewal scheduler,
// internal/clock's manual clock (kvlock.ManualClock) and the task
// runtime's timers, which before it each carried their own
// container/heap adapter.
package heapx

// The sifts are container/heap's, written on the typed slice: through
// heap.Interface every Push and Pop boxed its item in an interface, an
// allocation each (two per task in the runtime's ready queue).

// Heap orders items by Less; the smallest is at index 0. When SetIndex is
// set it is told every item's new position (and -1 when it leaves), so a
// caller can Fix or Remove an item it holds in O(log n). The zero Heap is
// not usable: build it with New.
type Heap[T any] struct {
	items    []T
	less     func(a, b T) bool
	setIndex func(T, int)
}

// New returns an empty heap ordered by less. setIndex may be nil.
func New[T any](less func(a, b T) bool, setIndex func(item T, i int)) *Heap[T] {
	return &Heap[T]{less: less, setIndex: setIndex}
}

// Len returns the number of items.
func (h *Heap[T]) Len() int { return len(h.items) }

// Peek returns the smallest item; ok is false when the heap is empty.
func (h *Heap[T]) Peek() (item T, ok bool) {
	if len(h.items) == 0 {
		return item, false
	}
	return h.items[0], true
}

// Push adds item.
func (h *Heap[T]) Push(item T) {
	if h.setIndex != nil {
		h.setIndex(item, len(h.items))
	}
	h.items = append(h.items, item)
	h.up(len(h.items) - 1)
}

// Pop removes and returns the smallest item; the heap must not be empty.
func (h *Heap[T]) Pop() T {
	n := len(h.items) - 1
	h.swap(0, n)
	h.down(0, n)
	return h.removeLast()
}

// Fix restores the order after the item at index i changed.
func (h *Heap[T]) Fix(i int) {
	if !h.down(i, len(h.items)) {
		h.up(i)
	}
}

// Remove removes and returns the item at index i.
func (h *Heap[T]) Remove(i int) T {
	n := len(h.items) - 1
	if n != i {
		h.swap(i, n)
		if !h.down(i, n) {
			h.up(i)
		}
	}
	return h.removeLast()
}

// Clear empties the heap, telling SetIndex that every item left.
func (h *Heap[T]) Clear() {
	if h.setIndex != nil {
		for _, it := range h.items {
			h.setIndex(it, -1)
		}
	}
	clear(h.items)
	h.items = h.items[:0]
}

func (h *Heap[T]) removeLast() T {
	n := len(h.items) - 1
	it := h.items[n]
	var zero T
	h.items[n] = zero
	h.items = h.items[:n]
	if h.setIndex != nil {
		h.setIndex(it, -1)
	}
	return it
}

func (h *Heap[T]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	if h.setIndex != nil {
		h.setIndex(h.items[i], i)
		h.setIndex(h.items[j], j)
	}
}

func (h *Heap[T]) up(j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *Heap[T]) down(i0, n int) bool {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && h.less(h.items[j2], h.items[j1]) {
			j = j2 // = 2*i + 2  // right child
		}
		if !h.less(h.items[j], h.items[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
