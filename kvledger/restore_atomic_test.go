package kvledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// Restore is all or nothing: a record the server would refuse fails it
// before the first write, and a failure part-way removes what it wrote.
func TestRestoreAllOrNothing(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	pending := func(k kvledger.IdempotencyKey, task any) kvledger.TaskState {
		return kvledger.TaskState{Key: k, Status: kvledger.StatusPending, Sequence: 1, Task: task}
	}
	stores := map[string]func() kvledger.Store{
		"kv":  func() kvledger.Store { return newKVStore(t, n.JS, kvledger.KVStoreConfig{}) },
		"mem": func() kvledger.Store { return kvledger.NewMemStore() },
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			l := newLedger(t, mk())
			count := func() int {
				snap, err := l.Snapshot(ctx)
				require.NoError(t, err)
				return len(snap.Tasks)
			}
			if name == "kv" {
				huge := strings.Repeat("x", 2<<20)
				err := l.Restore(ctx, kvledger.Snapshot{Tasks: []kvledger.TaskState{
					pending("a", 1), pending("b", 2), pending("c", 3), pending("d", huge)}})
				require.ErrorIs(t, err, kvledger.ErrTooLarge)
				require.Contains(t, err.Error(), "nothing restored")
				require.Equal(t, 0, count(), "nothing written before the size check failed")
			}

			// "x" exists: the restore fails at it and removes a and b.
			ok, err := l.Admit(ctx, "op", "x", 1, nil, t0)
			require.NoError(t, err)
			require.True(t, ok)
			err = l.Restore(ctx, kvledger.Snapshot{Tasks: []kvledger.TaskState{
				pending("a", 1), pending("b", 2), pending("x", 3), pending("z", 4)}})
			require.ErrorIs(t, err, kvledger.ErrExists)
			require.Equal(t, 1, count(), "only the record that was there before")

			require.NoError(t, l.Restore(ctx, kvledger.Snapshot{Tasks: []kvledger.TaskState{pending("a", 1), pending("b", 2)}}))
			require.Equal(t, 3, count(), "a restore after an undone one works")
		})
	}
}
