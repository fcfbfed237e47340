package chaos

import (
	"fmt"
	"math/rand/v2"
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
// once, so that being killed in one changes nothing about its outcome.
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
func predict(tasks []dagTask, maxAttempts int) map[kvledger.IdempotencyKey]dagOutcome {
	out := make(map[kvledger.IdempotencyKey]dagOutcome, len(tasks))
	for _, t := range tasks {
		blocked := false
		for _, n := range t.Needs {
			if out[n].status != kvledger.StatusCompleted {
				blocked = true
			}
		}
		switch {
		case blocked:
			out[t.Key] = dagOutcome{status: kvledger.StatusBlocked}
		case t.Permanent:
			out[t.Key] = dagOutcome{status: kvledger.StatusFailed, attempts: 1}
		case t.FailFirst >= maxAttempts:
			out[t.Key] = dagOutcome{status: kvledger.StatusFailed, attempts: maxAttempts}
		case t.Long:
			// A killed attempt may or may not be counted; the outcome is
			// the same.
			out[t.Key] = dagOutcome{status: kvledger.StatusCompleted}
		default:
			out[t.Key] = dagOutcome{status: kvledger.StatusCompleted, attempts: t.FailFirst + 1}
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
	got := predict(tasks, 3)
	require.Equal(t, map[kvledger.IdempotencyKey]dagOutcome{
		"a": {kvledger.StatusCompleted, 1},
		"b": {kvledger.StatusFailed, 3},
		"c": {kvledger.StatusCompleted, 3},
		"d": {kvledger.StatusBlocked, 0},
		"e": {kvledger.StatusBlocked, 0},
		"f": {kvledger.StatusFailed, 1},
	}, got)

	dag := randomDAG(rand.New(rand.NewPCG(1, 2)), 200, 3, 4, 1500)
	p := predict(dag, 3)
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
