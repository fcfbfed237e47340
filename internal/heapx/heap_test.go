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
		require.Same(t, it, h.h.items[it.idx])
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
