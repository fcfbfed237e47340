package kvlock_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlock"
)

// IsDataKey tells kvlock's data keys (tickets, election values) from
// its leases, for tools that list the bucket.
func TestIsDataKey(t *testing.T) {
	for key, want := range map[string]bool{
		"locks.q.job.t":                    true,  // a lock queue's ticket
		"locks.eq.svc.t":                   true,  // an election queue's ticket
		"locks.ev.svc":                     true,  // an election's value record
		"locks.l.job":                      false, // a lock's lease
		"locks.l.job.t":                    false, // the lease of the lock key "job.t"
		"locks.e.svc":                      false, // an election's lease
		"locks.q.job.00000000000000000001": false, // a queue entry is a lease
		"locks":                            false,
	} {
		require.Equal(t, want, kvlock.IsDataKey(key), key)
	}
}
