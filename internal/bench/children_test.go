package bench

// childEnv selects a child-process role (see scale_test.go): the test
// binary re-executes itself with it set and TestMain runs the role.
const childEnv = "NATSCOORD_BENCH_CHILD"

func runChild(role string) int { return 2 }
