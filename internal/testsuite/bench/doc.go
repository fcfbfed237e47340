// Package bench holds natscoord's benchmarks (its _test.go files; this
// package has no API). Each benchmark measures, in one run and against one
// embedded nats-server, the raw JetStream KV operations a primitive is built
// from and the primitive itself, interleaved so that noise on a shared
// machine hits both alike, and reports the primitive's speed as a fraction
// of the raw speed in the "x_raw" metric (1.0 = as fast as raw).
//
// Run them with `make bench`; results and targets are in BENCHMARKS.md.
// Nothing here runs under `go test` without -bench (the large set-ups, 10k
// held leases and 100k ledger records, live in benchmarks only) except
// TestReadmeFiguresAreBenchmarkRows, which reads README.md and
// BENCHMARKS.md: every figure the README gives is one of BENCHMARKS.md's.
package bench
