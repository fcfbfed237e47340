package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// ledger admit prints what its admission wrote, not the record read
// after it: an eager claimant (here one that claims every new "job-"
// record with one compare-and-set from the change its watch delivers, as
// fast as a worker can) does not make the user see "claimed" for what
// they just admitted. A key that already holds a record says why it was
// not admitted and what that record holds.
func TestLedgerAdmitPrintsItsAdmission(t *testing.T) {
	c, n := newCLI(t)
	c.ok("ledger", "admit", "--no-kind", "dep", "--seq", "1")
	l := openTestLedger(t, n)
	finish(t, l, "dep", kvledger.StatusCompleted)
	store, ok := l.Store().(*kvledger.KVStore)
	require.True(t, ok)
	ctx := natstest.Context(t, time.Minute)
	claimed := make(chan kvledger.IdempotencyKey, 64)
	w, err := store.WatchRecords(ctx, func(ch kvledger.Change) {
		if ch.Err != nil || ch.Deleted || ch.Record.Status != kvledger.StatusPending || !strings.HasPrefix(string(ch.Key), "job-") {
			return
		}
		old := ch.Record
		old.Rev = ch.Rev
		next := old
		next.Status, next.Owner, next.Fence = kvledger.StatusClaimed, "eager", old.Fence+1
		next.LeaseUntil, next.LastEvent, next.UpdatedAt = time.Now().Add(time.Minute), kvledger.ClaimedEvent, time.Now()
		if ok, err := store.CompareAndSwap(ctx, ch.Key, old, next); err == nil && ok {
			claimed <- ch.Key
		}
	})
	require.NoError(t, err)
	t.Cleanup(w.Stop)

	// The admission with a need rechecks the need after its write (one
	// more round trip), so a read after it lost the race to the claimant
	// more often than not: a few admissions show it.
	for i := range 8 {
		key := fmt.Sprintf("job-%d", i)
		args := []string{"ledger", "admit", "--no-kind", key, "--seq", "1", "--needs", "dep"}
		if i%2 == 1 {
			var adm struct {
				Admitted bool               `json:"admitted"`
				Task     kvledger.TaskState `json:"task"`
			}
			require.NoError(t, json.Unmarshal([]byte(c.ok(append([]string{"--json"}, args...)...)), &adm))
			require.True(t, adm.Admitted)
			require.Equal(t, kvledger.StatusPending, adm.Task.Status, "the record the admission wrote")
			require.Empty(t, adm.Task.Owner)
		} else {
			require.Regexp(t, `^`+key+` admitted: pending, fence \d+, revision \d+\n$`, c.ok(args...))
		}
		select {
		case k := <-claimed:
			require.Equal(t, kvledger.IdempotencyKey(key), k)
		case <-ctx.Done():
			t.Fatalf("%s was not claimed", key)
		}
		// Admitted again: an idempotent hit, which names what the key holds.
		require.Regexp(t, `^`+key+` not admitted \(the key already holds sequence 1, which --seq 1 does not exceed\): `+
			`running, owner eager, fence \d+, revision \d+\n$`, c.ok("ledger", "admit", "--no-kind", key, "--seq", "1"))
	}
	require.Regexp(t, `^dep not admitted \(the key already holds an ended task, which no admission changes\): completed, owner w, fence \d+, revision \d+\n$`,
		c.ok("ledger", "admit", "--no-kind", "dep", "--seq", "2"))
	var adm struct {
		Admitted bool               `json:"admitted"`
		Task     kvledger.TaskState `json:"task"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.ok("--json", "ledger", "admit", "--no-kind", "dep", "--seq", "2")), &adm))
	require.False(t, adm.Admitted)
	require.Equal(t, kvledger.StatusCompleted, adm.Task.Status, "the record that made it a no-op")

	// A delayed task says it is scheduled; one whose need failed, by what
	// it is blocked.
	require.Regexp(t, `^later admitted: scheduled, fence \d+`, c.ok("ledger", "admit", "--no-kind", "later", "--delay", "1h"))
	c.ok("ledger", "admit", "--no-kind", "bad", "--seq", "1")
	finish(t, l, "bad", kvledger.StatusFailed)
	require.Regexp(t, `^after admitted: blocked by bad, fence \d+`, c.ok("ledger", "admit", "--no-kind", "after", "--needs", "bad"))
}

// An admission over a blocked task says it is blocked, by what, and what
// unblocks it, not that it ended: the command it names returns the task
// to pending. A completed, failed or cancelled task is the ended one.
func TestLedgerAdmitOverABlockedTask(t *testing.T) {
	c, n := newCLI(t)
	l := openTestLedger(t, n)
	c.ok("ledger", "admit", "--no-kind", "bad")
	finish(t, l, "bad", kvledger.StatusFailed)
	c.ok("ledger", "admit", "--no-kind", "after", "--needs", "bad")

	out := c.ok("ledger", "admit", "--no-kind", "after", "--seq", "2")
	require.Regexp(t, "^after not admitted \\(the key holds a task blocked by bad, which admissions do not change; "+
		"`natscoord ledger reopen bad` returns it to pending\\): blocked by bad, fence \\d+, revision \\d+\n$", out)
	require.NotContains(t, out, "ended")

	c.ok("ledger", "reopen", "bad")
	require.Equal(t, kvledger.StatusPending, jsonTask(t, c.ok("--json", "ledger", "show", "after")).Status, "what the message named unblocks it")

	c.ok("ledger", "admit", "--no-kind", "gone")
	c.ok("ledger", "cancel", "gone")
	require.Regexp(t, `^gone not admitted \(the key already holds an ended task, which no admission changes\): cancelled, fence`,
		c.ok("ledger", "admit", "--no-kind", "gone", "--seq", "2"))
}
