// Package chaos holds natscoord's reliability tests: fencing
// safety under injected faults on a 3-node cluster, linearizability of
// lease, lock and ledger histories (checked with porcupine), the same
// checkers through partitions of the cluster itself (routes through
// proxies that a test cuts per direction), durability of
// acknowledged ledger writes across a SIGKILLed server process, lease
// takeover after a SIGKILLed holder process, the task runtime's crash test
// (a random DAG on worker processes, one SIGKILLed, one drained and one
// SIGSTOPped) and its overlap checker (no two handler runs of a task at
// once, there and under the partitions),
// and the security checks
// (TLS, auth, subject permissions, secrets kept out of logs).
//
// The only non-test code is Resource, the fence-checking resource every
// holder writes to. The tests run a short subset under `make test`; tests
// named ...Soak... run only when NATSCOORD_SOAK is set to a duration
// (`make soak`). RELIABILITY.md at the repository root records what was
// tried and the counts of the last run.
package chaos
