package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A schedule stored while two workers run is admitted once per period
// and each period's task runs once, with its payload's big integer
// intact; removing it stops it, and a schedule added after the removal
// runs without it.
func TestStoredScheduleLive(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	store := e.led.Store().(*kvledger.KVStore)
	var (
		mu   sync.Mutex
		ran  = map[kvledger.IdempotencyKey]int{}
		args = map[kvledger.IdempotencyKey]string{}
	)
	for _, owner := range []kvledger.OwnerID{"A", "B"} {
		e.worker(worker.Config{Owner: owner}, func(w *worker.Worker) {
			require.NoError(t, w.Handle("tick", func(ctx context.Context, task *worker.Task) error {
				var raw json.RawMessage
				if err := task.Decode(&raw); err != nil {
					return err
				}
				mu.Lock()
				ran[task.Key()]++
				args[task.Key()] = string(raw)
				mu.Unlock()
				return nil
			}))
		})
	}
	ctx := natstest.Context(t, 60*time.Second)
	periods := func(name string) []time.Time {
		mu.Lock()
		defer mu.Unlock()
		var out []time.Time
		for k := range ran {
			if got, start, ok := worker.ParsePeriodKey(k); ok && got == name {
				out = append(out, start)
			}
		}
		return out
	}
	sc, err := store.CreateSchedule(ctx, kvledger.Schedule{Name: "tick", Spec: "@every 1s",
		Task: kvledger.ScheduleTask{Kind: "tick", Task: json.RawMessage(`{"n":18446744073709551617}`)}})
	require.NoError(t, err)
	natstest.Eventually(t, 20*time.Second, func() bool { return len(periods("tick")) >= 3 }, "three periods of the stored schedule ran")

	require.NoError(t, store.DeleteSchedule(ctx, "tick", sc.Rev))
	removed := time.Now()
	_, err = store.CreateSchedule(ctx, kvledger.Schedule{Name: "tock", Spec: "@every 1s", Task: kvledger.ScheduleTask{Kind: "tick"}})
	require.NoError(t, err)
	natstest.Eventually(t, 20*time.Second, func() bool { return len(periods("tock")) >= 2 }, "two periods of the later schedule ran")

	// Each worker applies the removal as its own watch delivers it, and
	// admits due periods on its own timer: a worker a few milliseconds
	// behind at a period's boundary may still admit that one period of
	// tick, never a later one.
	for _, p := range periods("tick") {
		require.False(t, p.After(removed.Add(time.Second)), "tick ran at %s, over a period after its removal at %s", p, removed)
	}
	// Once per period, whatever the number of workers; the payload as stored.
	var keys []kvledger.IdempotencyKey
	require.NoError(t, store.Range(ctx, func(s kvledger.TaskState) bool {
		if strings.HasPrefix(string(s.Key), "schedule/") {
			keys = append(keys, s.Key)
		}
		return true
	}))
	e.waitFinal(20*time.Second, keys...)
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keys {
		require.Equal(t, 1, ran[k], "%s ran once", k)
		if name, _, _ := worker.ParsePeriodKey(k); name == "tick" {
			require.Equal(t, `{"n":18446744073709551617}`, args[k])
		}
	}
}

// A worker with IgnoreStoredSchedules, or without a handler for the
// schedule's kind, admits nothing for it.
func TestStoredScheduleIgnored(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	store := e.led.Store().(*kvledger.KVStore)
	noop := func(ctx context.Context, task *worker.Task) error { return nil }
	e.worker(worker.Config{Owner: "A", IgnoreStoredSchedules: true}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("tick", noop))
	})
	other := e.worker(worker.Config{Owner: "B"}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("other", noop))
	})
	ctx := natstest.Context(t, 30*time.Second)
	_, err := store.CreateSchedule(ctx, kvledger.Schedule{Name: "tick", Spec: "@every 1s", Task: kvledger.ScheduleTask{Kind: "tick"}})
	require.NoError(t, err)
	// B runs a schedule of its kind: its periods show time going by.
	_, err = store.CreateSchedule(ctx, kvledger.Schedule{Name: "tock", Spec: "@every 1s", Task: kvledger.ScheduleTask{Kind: "other"}})
	require.NoError(t, err)
	natstest.Eventually(t, 20*time.Second, func() bool { return other.Stats().Scheduled >= 2 }, "B admits tock's periods")
	require.NoError(t, store.Range(ctx, func(s kvledger.TaskState) bool {
		require.False(t, strings.HasPrefix(string(s.Key), "schedule/tick/"), "tick admitted: %s", s.Key)
		return true
	}))
}
