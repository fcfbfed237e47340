package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// The right fence with another owner is refused, and a completion names
// the owner that acted.
func TestLedgerCompleteChecksOwner(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "build", "--seq", "1")
	store, err := kvledger.NewKVStore(natstest.Context(t, 5*time.Second), n.JS, kvledger.KVStoreConfig{Bucket: defaultLedgerBucket})
	require.NoError(t, err)
	l, err := kvledger.New(store, nil)
	require.NoError(t, err)
	fence, err := l.Claim(natstest.Context(t, 5*time.Second), "w", "build", "w1", time.Minute, time.Now())
	require.NoError(t, err)
	f := fmt.Sprint(uint64(fence))
	require.Contains(t, c.fail("ledger", "complete", "build", "--owner", "w2", "--fence", f, "--status", "completed"), "fence token is stale")
	out := c.ok("ledger", "complete", "build", "--owner", "w1", "--fence", f, "--status", "completed")
	require.Equal(t, "build completed by w1 (fence "+f+")\n", out)
}
