package kvx

import "fmt"

// MaxReplicas is the largest replication factor JetStream accepts.
const MaxReplicas = 5

// CheckReplicas validates a bucket's replication factor, 0 meaning the
// default 1, and returns the factor to use. Each package wraps the error
// in its own ErrInvalidConfig.
func CheckReplicas(n int) (int, error) {
	if n < 0 || n > MaxReplicas {
		return 0, fmt.Errorf("kvx: replicas %d outside 1..%d (0 means 1)", n, MaxReplicas)
	}
	return max(n, 1), nil
}
