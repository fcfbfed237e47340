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
	Gone    bool      // every watched bucket is synced and none holds it
}

// claimLeaseOf reads the lease s names from the lease views, which follow
// the buckets by watch (no read per page). A lease in a bucket the
// dashboard does not watch (Config.LeaseBuckets) is named but not judged.
func (h *Handler) claimLeaseOf(s kvledger.TaskState) claimLease {
	if s.Status != kvledger.StatusClaimed || s.Lease == "" {
		return claimLease{}
	}
	c := claimLease{Key: s.Lease}
	synced := len(h.leases) > 0
	for _, v := range h.leases {
		if r, ok := v.get(s.Lease); ok {
			c.Watched, c.Expires = true, r.Expires
			return c
		}
		select {
		case <-v.ready:
		default:
			synced = false
		}
	}
	// Absent from every synced view: the claim's lease has ended, and
	// the claim is free for takeover, when the claim's bucket is among
	// the watched ones (the page says which buckets it read).
	c.Gone = synced
	return c
}
