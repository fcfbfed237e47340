package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// dagTask is one task of a random DAG and the behaviour its handler is
// told (in the payload) to have. Every worker runs the same handler, so
// the outcome depends on the payload and the attempt number only, never
// on which worker ran an attempt.
type dagTask struct {
	Key       kvledger.IdempotencyKey   `json:"-"`
	Needs     []kvledger.IdempotencyKey `json:"-"`
	FailFirst int                       `json:"fail_first"` // attempts 1..FailFirst return an error
	Permanent bool                      `json:"permanent"`  // the first attempt fails with a permanent error
	SleepMS   int                       `json:"sleep_ms"`   // time each attempt takes
	Long      bool                      `json:"long"`       // a task a worker is killed in (the parent watches for it)
}

// dagOutcome is the state a task must end in.
type dagOutcome struct {
	status   kvledger.Status
	attempts int // attempts the final record must show (0: not checked)
}

// randomDAG returns n tasks in topological order: each needs up to two
// earlier tasks. About 85% of the handlers succeed at once, 12% fail a
// few times and then succeed, 2% fail every attempt, 1% fail
// permanently; long tasks (the kill targets) take longLen and succeed at
// once, so that a kill in one leaves its outcome as predicted.
func randomDAG(rng *rand.Rand, n, maxAttempts, longs, longMS int) []dagTask {
	out := make([]dagTask, n)
	for i := range out {
		t := dagTask{Key: kvledger.IdempotencyKey(fmt.Sprintf("t%03d", i)), SleepMS: 1 + rng.IntN(10)}
		if i > 0 {
			seen := map[int]bool{}
			for range rng.IntN(3) {
				// Prefer recent tasks, so chains get deep.
				j := i - 1 - rng.IntN(min(i, 20))
				if !seen[j] {
					seen[j] = true
					t.Needs = append(t.Needs, out[j].Key)
				}
			}
		}
		switch p := rng.IntN(100); {
		case p < 85:
		case p < 97:
			t.FailFirst = 1 + rng.IntN(maxAttempts-1) // succeeds on a later attempt
		case p < 99:
			t.FailFirst = maxAttempts // fails every attempt
		default:
			t.Permanent = true
		}
		out[i] = t
	}
	// The long tasks: roots and early tasks that succeed at once, so that
	// they run while the graph is busy.
	for k := 0; k < longs && k < n; k++ {
		i := k * 3
		out[i].Long, out[i].SleepMS, out[i].FailFirst, out[i].Permanent = true, longMS, 0, false
	}
	return out
}

// predict is what the DAG must end as: completed iff every need completed
// and the handler eventually succeeded (after FailFirst failed attempts);
// failed after maxAttempts attempts (one for a permanent error) when every
// need completed but the handler never succeeded; blocked iff a need
// failed or was blocked.
//
// killed holds, per task, the attempts whose claim was taken over (a
// worker SIGKILLed or paused in them). Such an attempt counts (the
// runtime counts claims) but produces no result. A failure in attempt
// n >= the maximum, or a permanent one, fails the task; a takeover of
// an attempt below the maximum starts the next attempt, and a takeover
// of the last allowed attempt fails the task without running it again
// (a task never runs more than maxAttempts times). So the outcome is
// decided by the first attempt that either succeeds, fails for good, or
// is the last one and was killed.
func predict(tasks []dagTask, maxAttempts int, killed map[kvledger.IdempotencyKey][]int) map[kvledger.IdempotencyKey]dagOutcome {
	out := make(map[kvledger.IdempotencyKey]dagOutcome, len(tasks))
	for _, t := range tasks {
		blocked := false
		for _, n := range t.Needs {
			if out[n].status != kvledger.StatusCompleted {
				blocked = true
			}
		}
		if blocked {
			out[t.Key] = dagOutcome{status: kvledger.StatusBlocked}
			continue
		}
		for n := 1; ; n++ {
			if slices.Contains(killed[t.Key], n) {
				if n >= maxAttempts {
					out[t.Key] = dagOutcome{status: kvledger.StatusFailed, attempts: n}
					break
				}
				continue
			}
			fails := t.Permanent || n <= t.FailFirst
			if !fails {
				out[t.Key] = dagOutcome{status: kvledger.StatusCompleted, attempts: n}
				break
			}
			if t.Permanent || n >= maxAttempts {
				out[t.Key] = dagOutcome{status: kvledger.StatusFailed, attempts: n}
				break
			}
		}
	}
	return out
}

func TestPredictDAG(t *testing.T) {
	tasks := []dagTask{
		{Key: "a"},
		{Key: "b", FailFirst: 3},
		{Key: "c", Needs: []kvledger.IdempotencyKey{"a"}, FailFirst: 2},
		{Key: "d", Needs: []kvledger.IdempotencyKey{"b"}},
		{Key: "e", Needs: []kvledger.IdempotencyKey{"d", "c"}},
		{Key: "f", Needs: []kvledger.IdempotencyKey{"c"}, Permanent: true},
	}
	got := predict(tasks, 3, nil)
	require.Equal(t, map[kvledger.IdempotencyKey]dagOutcome{
		"a": {kvledger.StatusCompleted, 1},
		"b": {kvledger.StatusFailed, 3},
		"c": {kvledger.StatusCompleted, 3},
		"d": {kvledger.StatusBlocked, 0},
		"e": {kvledger.StatusBlocked, 0},
		"f": {kvledger.StatusFailed, 1},
	}, got)

	// A kill in the attempt that would succeed moves success to the next
	// attempt; a kill in the last allowed attempt fails the task there,
	// and its dependents are blocked; a kill in an attempt that fails
	// anyway moves the failure on.
	got = predict(tasks, 3, map[kvledger.IdempotencyKey][]int{"a": {1}, "c": {3}})
	require.Equal(t, dagOutcome{kvledger.StatusCompleted, 2}, got["a"])
	require.Equal(t, dagOutcome{kvledger.StatusFailed, 3}, got["c"])
	require.Equal(t, dagOutcome{kvledger.StatusBlocked, 0}, got["e"])
	require.Equal(t, dagOutcome{kvledger.StatusBlocked, 0}, got["f"])
	got = predict(tasks, 3, map[kvledger.IdempotencyKey][]int{"c": {2}, "f": {1}, "b": {1, 2}})
	require.Equal(t, dagOutcome{kvledger.StatusCompleted, 3}, got["c"])
	require.Equal(t, dagOutcome{kvledger.StatusFailed, 2}, got["f"])
	require.Equal(t, dagOutcome{kvledger.StatusFailed, 3}, got["b"])
	got = predict(tasks, 4, map[kvledger.IdempotencyKey][]int{"a": {1, 2}})
	require.Equal(t, dagOutcome{kvledger.StatusCompleted, 3}, got["a"])

	dag := randomDAG(rand.New(rand.NewPCG(1, 2)), 200, 3, 4, 1500)
	p := predict(dag, 3, nil)
	count := map[kvledger.Status]int{}
	for _, o := range p {
		count[o.status]++
	}
	t.Logf("outcomes: %v", count)
	// The generator makes every outcome appear.
	require.Positive(t, count[kvledger.StatusCompleted])
	require.Positive(t, count[kvledger.StatusFailed])
	require.Positive(t, count[kvledger.StatusBlocked])
}
