package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// A fair queue takes groups in turn, a group joining at the end; a task
// filed back after its pick is taken again first, and its group's turn
// counts once.
func TestFairQueueTurns(t *testing.T) {
	ix := newIndex("kvledger.t.")
	ix.fair["k"] = true
	var rev uint64
	add := func(key, group string) {
		rev++
		k := kvledger.IdempotencyKey(key)
		ix.apply(&kvledger.Change{Key: k, Rev: rev, Record: kvledger.TaskState{Key: k, Status: kvledger.StatusPending, Kind: "k", Group: group}}, true)
		ix.enqueue(k, ix.recs[k])
	}
	pop := func() readyItem {
		it, ok := ix.ready["k"].pop()
		require.True(t, ok)
		delete(ix.queued, it.key)
		return it
	}
	add("a1", "A")
	add("a2", "A")
	add("a3", "A")
	add("b1", "B")
	first := pop()
	require.Equal(t, kvledger.IdempotencyKey("a1"), first.key)
	ix.requeue("k", first) // not started: keeps its place
	again := pop()
	require.Equal(t, first, again)
	var got []kvledger.IdempotencyKey
	for range 3 {
		got = append(got, pop().key)
	}
	require.Equal(t, []kvledger.IdempotencyKey{"b1", "a2", "a3"}, got)
	_, ok := ix.ready["k"].pop()
	require.False(t, ok)
	require.True(t, readyBefore(first, readyItem{key: "b1", ready: 4, own: 4, turn: 2, floor: 4}), "picked tasks go by their pick")
}
