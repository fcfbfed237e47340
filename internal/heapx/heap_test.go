package heapx

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

type item struct {
	v   int
	idx int
}

func TestHeapOrdersAndTracksPositions(t *testing.T) {
	h := New(func(a, b *item) bool { return a.v < b.v }, func(it *item, i int) { it.idx = i })
	r := rand.New(rand.NewPCG(1, 2))
	var all []*item
	for range 200 {
		it := &item{v: r.IntN(1000), idx: -1}
		all = append(all, it)
		h.Push(it)
	}
	// Every tracked position names the item; Fix and Remove use them.
	for _, it := range all {
		require.Same(t, it, h.items[it.idx])
	}
	all[7].v = -1
	h.Fix(all[7].idx)
	top, ok := h.Peek()
	require.True(t, ok)
	require.Same(t, all[7], top)
	removed := h.Remove(all[9].idx)
	require.Same(t, all[9], removed)
	require.Equal(t, -1, all[9].idx)

	var got []int
	for h.Len() > 0 {
		it := h.Pop()
		require.Equal(t, -1, it.idx)
		got = append(got, it.v)
	}
	require.True(t, slices.IsSorted(got))
	require.Len(t, got, 199)
	_, ok = h.Peek()
	require.False(t, ok)
}

func TestHeapClearUntracksEveryItem(t *testing.T) {
	h := New(func(a, b *item) bool { return a.v < b.v }, func(it *item, i int) { it.idx = i })
	a, b := &item{v: 1}, &item{v: 2}
	h.Push(a)
	h.Push(b)
	h.Clear()
	require.Zero(t, h.Len())
	require.Equal(t, -1, a.idx)
	require.Equal(t, -1, b.idx)
	h.Push(b)
	top, _ := h.Peek()
	require.Same(t, b, top)
}

func TestHeapWithoutPositions(t *testing.T) {
	h := New(func(a, b int) bool { return a < b }, nil)
	for _, v := range []int{5, 3, 9, 1} {
		h.Push(v)
	}
	require.Equal(t, 1, h.Pop())
	require.Equal(t, 3, h.Pop())
	h.Clear()
	require.Zero(t, h.Len())
}

// TestHeapPushPopAllocatesNothing: an item goes in and out by value, not
// boxed in an interface as through container/heap (the runtime's ready
// queue pushes and pops one per task).
func TestHeapPushPopAllocatesNothing(t *testing.T) {
	type ready struct {
		key  string
		prio int
		seq  uint64
	}
	h := New(func(a, b ready) bool { return a.prio > b.prio || a.prio == b.prio && a.seq < b.seq }, nil)
	for i := range 64 {
		h.Push(ready{key: "k", prio: i % 3, seq: uint64(i)})
	}
	var seq uint64 = 64
	allocs := testing.AllocsPerRun(100, func() {
		seq++
		h.Push(ready{key: "k", prio: int(seq % 3), seq: seq})
		h.Pop()
	})
	require.Zero(t, allocs)
}

// TestHeapMatchesSortedOrder: random pushes, removals, fixes and pops
// come out in sorted order, positions tracked throughout.
func TestHeapMatchesSortedOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		h := New(func(a, b *item) bool { return a.v < b.v }, func(it *item, i int) { it.idx = i })
		var in []*item
		for range r.IntN(100) + 1 {
			it := &item{v: r.IntN(50)}
			in = append(in, it)
			h.Push(it)
		}
		for range r.IntN(20) {
			it := in[r.IntN(len(in))]
			if it.idx < 0 {
				continue
			}
			if r.IntN(2) == 0 {
				it.v = r.IntN(50)
				h.Fix(it.idx)
			} else {
				require.Same(t, it, h.Remove(it.idx))
			}
		}
		for _, it := range in {
			if it.idx >= 0 {
				require.Same(t, it, h.items[it.idx], "round %d", round)
			}
		}
		var got []int
		for h.Len() > 0 {
			got = append(got, h.Pop().v)
		}
		require.True(t, slices.IsSorted(got), "round %d: %v", round, got)
	}
}
