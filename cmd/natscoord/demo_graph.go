package main

import (
	"github.com/natscoord/natscoord/kvledger"
)

// demoTask is one node of the demo's dependency graph.
type demoTask struct {
	key   kvledger.IdempotencyKey
	layer int
	needs []kvledger.IdempotencyKey
}

// demoGraph is a small build pipeline in five layers. integ-test fails, so
// package, publish and announce end blocked by it; docs is the task whose
// first worker "pauses" past its lease, is taken over, and is then fenced
// out when it wakes and tries to complete it.
var demoGraph = []demoTask{
	{"fetch-src", 0, nil},
	{"fetch-deps", 0, nil},
	{"gen-code", 1, keys("fetch-src")},
	{"lint", 1, keys("fetch-src")},
	{"compile", 1, keys("fetch-src", "fetch-deps")},
	{"unit-test", 2, keys("compile")},
	{"integ-test", 2, keys("compile", "gen-code")},
	{"docs", 2, keys("gen-code")},
	{"package", 3, keys("unit-test", "integ-test", "lint")},
	{"site", 3, keys("docs")},
	{"publish", 4, keys("package")},
	{"announce", 4, keys("publish", "site")},
}

const (
	// demoFailing is the task whose worker reports failure.
	demoFailing kvledger.IdempotencyKey = "integ-test"
	// demoStalling is the task whose first claimant pauses past its lease.
	demoStalling kvledger.IdempotencyKey = "docs"
)

func keys(ks ...string) []kvledger.IdempotencyKey {
	out := make([]kvledger.IdempotencyKey, len(ks))
	for i, k := range ks {
		out[i] = kvledger.IdempotencyKey(k)
	}
	return out
}

// demoExpected is the outcome the demo predicts: the status of every task
// and, for blocked ones, the key that blocks them. It follows from the graph
// alone, whatever the scheduling: workers claim a task only once all its
// needs completed, and the failure of integ-test blocks its transitive
// dependents before any of them can be claimed.
func demoExpected() map[kvledger.IdempotencyKey]expectedTask {
	out := make(map[kvledger.IdempotencyKey]expectedTask, len(demoGraph))
	failed := map[kvledger.IdempotencyKey]bool{}
	for _, t := range demoGraph { // the graph is in topological order
		e := expectedTask{status: kvledger.StatusCompleted}
		for _, n := range t.needs {
			if failed[n] {
				e = expectedTask{status: kvledger.StatusBlocked, blockedBy: demoFailing}
			}
		}
		if t.key == demoFailing {
			e = expectedTask{status: kvledger.StatusFailed}
		}
		if e.status != kvledger.StatusCompleted {
			failed[t.key] = true
		}
		out[t.key] = e
	}
	return out
}

type expectedTask struct {
	status    kvledger.Status
	blockedBy kvledger.IdempotencyKey
}
