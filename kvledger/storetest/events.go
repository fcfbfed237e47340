package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/internal/testkit/suitecheck"
	"github.com/natscoord/natscoord/kvledger"
)

func testEvents(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	l, rec := newLedger(t, newStore)
	admit(t, l, "p")
	admit(t, l, "q", "p")
	f := claim(t, l, "p", "w", t0)
	suitecheck.NoError(t, l.Renew(ctx, "w", "p", "w", f, lease, t0))
	suitecheck.NoError(t, l.Release(ctx, "w", "p", "w", f, t0))
	claim(t, l, "p", "w", t0)
	f, err := l.Takeover(ctx, "w2", "p", "w2", lease, t0.Add(time.Hour))
	suitecheck.NoError(t, err)
	suitecheck.NoError(t, l.Complete(ctx, "w2", "p", "w2", f, kvledger.StatusFailed, t0.Add(time.Hour)))

	suitecheck.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.ClaimedEvent, kvledger.RenewedEvent,
		kvledger.ReleasedEvent, kvledger.ClaimedEvent, kvledger.TakenOverEvent, kvledger.CompletedEvent}, rec.names("p"))
	suitecheck.Equal(t, []events.Name{kvledger.AdmittedEvent, kvledger.BlockedEvent}, rec.names("q"))

	last := map[string]uint64{}
	for _, e := range rec.events("p", "q") {
		suitecheck.NoError(t, e.Validate())
		if r, ok := last[e.Key]; ok {
			suitecheck.Greater(t, e.Revision, r, "revisions rise per key")
		}
		suitecheck.Equal(t, last[e.Key], e.PrevRevision, "%s revision %d names the key's previous write", e.Key, e.Revision)
		last[e.Key] = e.Revision
		if e.Key == "q" && e.Name == kvledger.BlockedEvent {
			suitecheck.Equal(t, "p", e.BlockedBy)
			suitecheck.Equal(t, string(kvledger.StatusBlocked), e.Status)
			suitecheck.Equal(t, "w2", e.Actor)
		}
		if e.Key == "p" && e.Name == kvledger.CompletedEvent {
			suitecheck.Equal(t, string(kvledger.StatusFailed), e.Status)
			suitecheck.Equal(t, uint64(f), e.Fence)
		}
	}
}

// testConcurrentClaims: many workers race for the same records; each
// record is claimed exactly once and fences are distinct.
func testConcurrentClaims(t *testing.T, newStore NewStore) {
	ctx := ctxFor(t)
	store := newStore(t)
	const keys, workers = 5, 4
	l0, err := kvledger.New(store)
	suitecheck.NoError(t, err)
	for i := range keys {
		admit(t, l0, kvledger.IdempotencyKey(rune('a'+i)))
	}
	var mu sync.Mutex
	won := map[kvledger.IdempotencyKey][]kvledger.OwnerID{}
	var wg sync.WaitGroup
	for w := range workers {
		l, err := kvledger.New(store)
		suitecheck.NoError(t, err)
		owner := kvledger.OwnerID(rune('A' + w))
		wg.Go(func() {
			for i := range keys {
				k := kvledger.IdempotencyKey(rune('a' + i))
				_, err := l.Claim(ctx, "w", k, owner, lease, t0)
				if err == nil {
					mu.Lock()
					won[k] = append(won[k], owner)
					mu.Unlock()
				} else if !assertLost(err) {
					t.Errorf("claim %s: %v", k, err)
				}
			}
		})
	}
	wg.Wait()
	suitecheck.Len(t, won, keys)
	for k, owners := range won {
		suitecheck.Len(t, owners, 1, "key %s claimed by %v", k, owners)
	}
}

func assertLost(err error) bool {
	return errorsIs(err, kvledger.ErrLeaseActive)
}
