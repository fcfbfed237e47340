package tasks_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/tasks"
)

type tenantJob struct{}

func (tenantJob) Kind() string { return "tenant-job" }

// Config.FairKinds reaches the client's worker: tenant a's 6 tasks, then
// b's 2, submitted before Start, start a, b, a, b, then the rest of a's.
func TestFairKindsTakeGroupsInTurn(t *testing.T) {
	c := newClient(t, tasks.Config{Concurrency: 1, FairKinds: []string{"tenant-job"}})
	var (
		mu    sync.Mutex
		order []kvledger.IdempotencyKey
	)
	require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[tenantJob]) error {
		mu.Lock()
		order = append(order, tk.Key)
		mu.Unlock()
		return nil
	}))
	ctx := natstest.Context(t, 30*time.Second)
	var keys []kvledger.IdempotencyKey
	submit := func(group string, i int) kvledger.IdempotencyKey {
		k := kvledger.IdempotencyKey(fmt.Sprintf("%s-%d", group, i))
		_, err := c.Submit(ctx, tenantJob{}, &tasks.SubmitOpts{Key: k, Group: group})
		require.NoError(t, err)
		keys = append(keys, k)
		return k
	}
	var a, b []kvledger.IdempotencyKey
	for i := range 6 {
		a = append(a, submit("a", i))
	}
	for i := range 2 {
		b = append(b, submit("b", i))
	}
	require.NoError(t, c.Start(ctx))
	final, err := c.Wait(ctx, keys...)
	require.NoError(t, err)
	for k, s := range final {
		require.Equal(t, kvledger.StatusCompleted, s.Status, k)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, append([]kvledger.IdempotencyKey{a[0], b[0], a[1], b[1]}, a[2:]...), order)
}
