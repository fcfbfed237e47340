// Package modcheck tests natscoord's modules the way an outside user meets
// them: through a module proxy, with no replace directive and no
// workspace. Its test serves the core module at the version that the
// nested modules require (built from that commit with git) and the nested
// modules from the working tree, then builds a user's program against
// them and reads the user's module graph.
//
// It also guards the source's shape: clock_test.go fails on a bare
// time.Now (or Since, Until, a timer) in library code, which must read
// the time through internal/clock.
//
// It has no code of its own; see modcheck_test.go and clock_test.go.
package modcheck
