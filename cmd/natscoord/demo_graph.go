package main

import (
	"github.com/natscoord/natscoord/kvledger"
)

// demoTask is one node of the demo's dependency graph.
type demoTask struct {
	key   kvledger.IdempotencyKey
	shell bool // run by `natscoord work --kind shell`; otherwise by the Go services
	needs []kvledger.IdempotencyKey
}

// demoGraph is a small build pipeline. The Go services (tasks.Client)
// run the "build" tasks, two `natscoord work` processes the "shell" ones.
// fetch-deps fails its first attempt and is retried; integ-test fails, so
// package, publish and announce end blocked by it; docs hangs on its first
// worker, which the demo then kills (on Linux), and another worker takes
// it over once the server has expired the dead worker's claim.
var demoGraph = []demoTask{
	{"fetch-src", false, nil},
	{"fetch-deps", false, nil},
	{"gen-code", false, keys("fetch-src")},
	{"lint", true, keys("fetch-src")},
	{"compile", false, keys("fetch-src", "fetch-deps")},
	{"unit-test", false, keys("compile")},
	{"integ-test", false, keys("compile", "gen-code")},
	{"docs", true, keys("gen-code")},
	{"package", false, keys("unit-test", "integ-test", "lint")},
	{"site", true, keys("docs")},
	{"publish", false, keys("package")},
	{"announce", false, keys("publish", "site")},
}

const (
	// demoFailing is the task whose handler fails for good.
	demoFailing kvledger.IdempotencyKey = "integ-test"
	// demoRetried is the task whose first attempt fails.
	demoRetried kvledger.IdempotencyKey = "fetch-deps"
	// demoCrashed is the task whose first worker hangs and is killed.
	demoCrashed kvledger.IdempotencyKey = "docs"
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
