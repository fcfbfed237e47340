package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// acked records the ledger writes a server acknowledged.
type acked struct {
	mu        sync.Mutex
	admitted  []kvledger.IdempotencyKey
	claimed   map[kvledger.IdempotencyKey]kvledger.FenceToken
	completed []kvledger.IdempotencyKey
}

// TestDurabilitySIGKILL runs a server as a child process, drives ledger
// admissions, claims and completions against it, SIGKILLs it mid-load,
// restarts it on the same data dir and port, and checks that every
// acknowledged write is there. With SyncAlways every acknowledgement
// follows an fsync; without it, acknowledged writes are in the page cache,
// which a process kill does not lose (an OS crash could; see
// RELIABILITY.md).
func TestDurabilitySIGKILL(t *testing.T) {
	for _, mode := range []string{"always", "default"} {
		t.Run("sync="+mode, func(t *testing.T) { durabilityRun(t, mode, 150) })
	}
}

// TestDurabilitySoak repeats the kill-and-restart with both sync modes and
// varying kill points for $NATSCOORD_SOAK.
func TestDurabilitySoak(t *testing.T) {
	d := soakDuration(t)
	for i, start := 0, time.Now(); time.Since(start) < d; i++ {
		mode := []string{"always", "default"}[i%2]
		t.Run(fmt.Sprintf("%d-sync=%s", i, mode), func(t *testing.T) { durabilityRun(t, mode, int64(50+i*37%400)) })
	}
}

func durabilityRun(t *testing.T, mode string, killAfter int64) {
	dir, port := t.TempDir(), freePort(t)
	env := []string{envDir + "=" + dir, envPort + "=" + strconv.Itoa(port), envSync + "=" + mode}
	srv, line := startChild(t, "server", env...)
	url := strings.TrimPrefix(line, "ready ")

	nc, err := nats.Connect(url, nats.NoReconnect())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: "durable"})
	require.NoError(t, err)
	l, err := kvledger.New(store)
	require.NoError(t, err)

	a := &acked{claimed: make(map[kvledger.IdempotencyKey]kvledger.FenceToken)}
	var completions, failures atomic.Int64
	killed := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := kvledger.IdempotencyKey(fmt.Sprintf("w%d-%d", w, i))
				if err := durabilityStep(l, a, key); err != nil {
					failures.Add(1)
					return // the connection is gone: outcome of this step unknown
				}
				if completions.Add(1) == killAfter {
					close(killed)
				}
			}
		})
	}
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatal("load did not reach the kill point")
	}
	srv.Kill(t) // SIGKILL while the workers keep writing
	wg.Wait()
	nc.Close()

	srv2, line := startChild(t, "server", env...)
	defer srv2.Stop(t)
	nc2, err := nats.Connect(strings.TrimPrefix(line, "ready "))
	require.NoError(t, err)
	defer nc2.Close()
	js2, err := jetstream.New(nc2)
	require.NoError(t, err)
	store2, err := kvledger.NewKVStore(ctx, js2, kvledger.KVStoreConfig{Bucket: "durable"})
	require.NoError(t, err)
	l2, err := kvledger.New(store2)
	require.NoError(t, err)

	missing := 0
	check := func(key kvledger.IdempotencyKey, ok func(kvledger.TaskState) bool, what string) {
		s, found, err := l2.State(ctx, key)
		require.NoError(t, err)
		if !found || !ok(s) {
			missing++
			t.Errorf("acknowledged %s of %q lost: found=%v state=%+v", what, key, found, s)
		}
	}
	for _, k := range a.admitted {
		check(k, func(kvledger.TaskState) bool { return true }, "admission")
	}
	for k, f := range a.claimed {
		check(k, func(s kvledger.TaskState) bool {
			return s.Fence >= f && (s.Status == kvledger.StatusClaimed || s.Status == kvledger.StatusCompleted)
		}, "claim")
	}
	for _, k := range a.completed {
		check(k, func(s kvledger.TaskState) bool { return s.Status == kvledger.StatusCompleted }, "completion")
	}
	report(t, "durability", fmt.Sprintf("durability (sync=%s): SIGKILL mid-load; acknowledged %d admissions, %d claims, %d completions; %d writes cut by the kill; missing after restart: %d",
		mode, len(a.admitted), len(a.claimed), len(a.completed), failures.Load(), missing))
}

// durabilityStep admits, claims and completes key, recording each write
// once the server acknowledged it.
func durabilityStep(l *kvledger.Ledger, a *acked, key kvledger.IdempotencyKey) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := time.Now()
	ok, err := l.Admit(ctx, "durability", key, 1, map[string]string{"k": string(key)}, now)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("fresh key not admitted")
	}
	a.mu.Lock()
	a.admitted = append(a.admitted, key)
	a.mu.Unlock()
	fence, err := l.Claim(ctx, "durability", key, "worker", time.Hour, now)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.claimed[key] = fence
	a.mu.Unlock()
	if err := l.Complete(ctx, "durability", key, "worker", fence, kvledger.StatusCompleted, now); err != nil {
		return err
	}
	a.mu.Lock()
	a.completed = append(a.completed, key)
	a.mu.Unlock()
	return nil
}
