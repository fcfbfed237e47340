package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// leaseEntry is a stored lease value of key held by owner (a 64-hex
// owner hash of one repeated digit) at rev.
func leaseEntry(t *testing.T, key string, owner byte, rev uint64) kvx.Entry {
	t.Helper()
	v, err := json.Marshal(kvlease.Holder{ID: "h" + string(owner), TTLMillis: 10_000, OwnerHash: strings.Repeat(string(owner), 64), Acquired: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return kvx.Entry{Key: key, Value: v, Revision: rev, Op: kvx.OpPut, Created: time.Now()}
}

// A key whose holder changed while no feed ran comes back, from a
// restarted feed's current values (not live), with another owner: its
// fence is bounded by the value's revision, as for a key seen for the
// first time, not left at zero (the page showed "≤0").
func TestLeaseViewNewHolderFromRestartedFeed(t *testing.T) {
	v := newLeaseView("leases", func(string) bool { return true })
	if _, ok := v.apply(leaseEntry(t, "jobs.a", 'a', 5), true); !ok {
		t.Fatal("first holder not applied")
	}
	c, ok := v.apply(leaseEntry(t, "jobs.a", 'b', 9), false)
	if !ok {
		t.Fatal("new holder not applied")
	}
	r := v.rows["jobs.a"]
	if c.What != "acquired" || r.Fence != 9 || r.FenceKnown {
		t.Fatalf("change %q, fence %d (known %v); want acquired, 9, not known", c.What, r.Fence, r.FenceKnown)
	}
}
