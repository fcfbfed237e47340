package dashboard

import (
	"time"

	"github.com/natscoord/natscoord/kvledger"
)

// claimLease is what the task page says of a claim's lease: the lease a
// claimed record names lives in a lease bucket, and the server expires it
// (kvledger's one claim protocol), so its real expiry is the lease's, not
// the LeaseUntil the claimant wrote into the record with its own clock.
type claimLease struct {
	Key     string    // the lease key the record names; empty: none
	Watched bool      // a lease bucket the dashboard watches holds the key
	Expires time.Time // when the server expires it unless renewed (Watched)
}

// claimLeaseOf reads the lease s names from the lease views, which follow
// the buckets by watch (no read per page). The lease key does not say
// which bucket holds it, so a key found in no watched bucket is not
// judged: its claim has ended, or its bucket is not among
// Config.LeaseBuckets, and the page says both.
func (h *Handler) claimLeaseOf(s kvledger.TaskState) claimLease {
	if s.Status != kvledger.StatusClaimed || s.Lease == "" {
		return claimLease{}
	}
	c := claimLease{Key: s.Lease}
	for _, v := range h.leases {
		if r, ok := v.get(s.Lease); ok {
			c.Watched, c.Expires = true, r.Expires
			break
		}
	}
	return c
}
