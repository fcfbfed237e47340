package chaos

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
)

// The models must refuse histories that break the properties they stand
// for; otherwise a passing check proves nothing.
func TestModelsRejectBadHistories(t *testing.T) {
	acq := func(c int, call, ret int64, ok bool, fence uint64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: lockIn{Acquire: true}, Call: call, Output: lockOut{OK: ok, Fence: fence}, Return: ret}
	}
	lock := lockModel.ToModel()
	// Two holders at once.
	require.False(t, porcupine.CheckOperations(lock, []porcupine.Operation{acq(0, 0, 1, true, 5), acq(1, 2, 3, true, 6)}))
	// A fence that does not grow.
	require.False(t, porcupine.CheckOperations(lock, []porcupine.Operation{
		acq(0, 0, 1, true, 5),
		{ClientId: 0, Input: lockIn{Fence: 5}, Call: 2, Output: lockOut{OK: true}, Return: 3},
		acq(1, 4, 5, true, 5),
	}))
	// An acquire of unknown outcome explains a later refusal, and the
	// orphaned lease may expire.
	require.True(t, porcupine.CheckOperations(lock, []porcupine.Operation{
		{ClientId: 0, Input: lockIn{Acquire: true}, Call: 0, Output: lockOut{Unknown: true}, Return: math.MaxInt64},
		acq(1, 2, 3, false, 0),
		acq(1, 4, 5, true, 9),
	}))

	led := ledgerModel.ToModel()
	op := func(c int, call, ret int64, in ledgerIn, out ledgerOut) porcupine.Operation {
		in.Key = "k"
		return porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret}
	}
	admit := op(0, 0, 1, ledgerIn{Op: opAdmit, Seq: 1}, ledgerOut{OK: true})
	// Two claims of a live lease.
	require.False(t, porcupine.CheckOperations(led, []porcupine.Operation{
		admit,
		op(1, 2, 3, ledgerIn{Op: opClaim, Owner: "a"}, ledgerOut{Fence: 7}),
		op(2, 4, 5, ledgerIn{Op: opClaim, Owner: "b"}, ledgerOut{Fence: 8}),
	}))
	// A stale fence completing.
	require.False(t, porcupine.CheckOperations(led, []porcupine.Operation{
		admit,
		op(1, 2, 3, ledgerIn{Op: opClaim, Owner: "a"}, ledgerOut{Fence: 7}),
		op(2, 4, 5, ledgerIn{Op: opTakeover, Owner: "b"}, ledgerOut{Fence: 8}),
		op(1, 6, 7, ledgerIn{Op: opComplete, Owner: "a", Fence: 7}, ledgerOut{}),
	}))
	// Admitted twice.
	require.False(t, porcupine.CheckOperations(led, []porcupine.Operation{
		admit, op(1, 2, 3, ledgerIn{Op: opAdmit, Seq: 1}, ledgerOut{OK: true}),
	}))
	// The legal version of the takeover story.
	require.True(t, porcupine.CheckOperations(led, []porcupine.Operation{
		admit,
		op(1, 2, 3, ledgerIn{Op: opClaim, Owner: "a"}, ledgerOut{Fence: 7}),
		op(2, 4, 5, ledgerIn{Op: opTakeover, Owner: "b"}, ledgerOut{Fence: 8}),
		op(1, 6, 7, ledgerIn{Op: opComplete, Owner: "a", Fence: 7}, ledgerOut{Err: "fenced"}),
		op(2, 8, 9, ledgerIn{Op: opComplete, Owner: "b", Fence: 8}, ledgerOut{}),
	}))
	// After the winner completed: a stale token is fenced (the seed
	// ledger's order for Complete and Release), the winner's own token
	// is not claimed.
	story := func(late ledgerOut, winnerAgain ledgerOut) []porcupine.Operation {
		return []porcupine.Operation{
			admit,
			op(1, 2, 3, ledgerIn{Op: opClaim, Owner: "a"}, ledgerOut{Fence: 7}),
			op(2, 4, 5, ledgerIn{Op: opTakeover, Owner: "b"}, ledgerOut{Fence: 8}),
			op(2, 6, 7, ledgerIn{Op: opComplete, Owner: "b", Fence: 8}, ledgerOut{}),
			op(1, 8, 9, ledgerIn{Op: opComplete, Owner: "a", Fence: 7}, late),
			op(2, 10, 11, ledgerIn{Op: opRelease, Owner: "b", Fence: 8}, winnerAgain),
		}
	}
	require.True(t, porcupine.CheckOperations(led, story(ledgerOut{Err: "fenced"}, ledgerOut{Err: "notclaimed"})))
	require.False(t, porcupine.CheckOperations(led, story(ledgerOut{Err: "notclaimed"}, ledgerOut{Err: "notclaimed"})))
	require.False(t, porcupine.CheckOperations(led, story(ledgerOut{Err: "fenced"}, ledgerOut{Err: "fenced"})))
}
