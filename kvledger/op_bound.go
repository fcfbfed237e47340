package kvledger

import (
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
)

// OpBounded is a store, or a lease taker, that bounds each of its
// operations (one read or one write, its internal retries included) by
// OpTimeout: a *KVStore and a *kvlease.Manager are. The runtime (package
// worker) arms no timer of its own for a call on a store that does
// (within its own bound), and the Ledger bounds the cleanup of a claim's
// lease by the lease manager's bound.
type OpBounded interface{ OpTimeout() time.Duration }

// opBound is the bound of one operation of the first of xs that states
// one (OpBounded, > 0), kvx.DefaultOpTimeout when none does.
func opBound(xs ...any) time.Duration {
	for _, x := range xs {
		if b, ok := x.(OpBounded); ok && b.OpTimeout() > 0 {
			return b.OpTimeout()
		}
	}
	return kvx.DefaultOpTimeout
}
