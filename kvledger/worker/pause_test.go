package worker_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A pause leaves a kind's schedules admitting unless it says Schedules:
// then no period is admitted while it lasts. Either way no task of the
// kind runs until the resume, and then they do.
func TestPauseAndSchedules(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	store := e.led.Store().(*kvledger.KVStore)
	var (
		mu  sync.Mutex
		ran = map[string]int{}
	)
	e.worker(worker.Config{Owner: "A"}, func(w *worker.Worker) {
		for _, kind := range []string{"held", "waits", "runs"} {
			require.NoError(t, w.Handle(kind, func(ctx context.Context, task *worker.Task) error {
				mu.Lock()
				ran[kind]++
				mu.Unlock()
				return nil
			}))
		}
	})
	ctx := natstest.Context(t, 60*time.Second)
	_, err := store.PauseKind(ctx, kvledger.Pause{Kind: "held", Schedules: true})
	require.NoError(t, err)
	_, err = store.PauseKind(ctx, kvledger.Pause{Kind: "waits"})
	require.NoError(t, err)
	for _, kind := range []string{"held", "waits", "runs"} {
		_, err := store.CreateSchedule(ctx, kvledger.Schedule{Name: kind, Spec: "@every 1s", Task: kvledger.ScheduleTask{Kind: kind}})
		require.NoError(t, err)
	}
	count := func(kind string) int {
		mu.Lock()
		defer mu.Unlock()
		return ran[kind]
	}
	admitted := func(name string) (n int, attempts int) {
		require.NoError(t, store.Range(ctx, func(s kvledger.TaskState) bool {
			if strings.HasPrefix(string(s.Key), "schedule/"+name+"/") {
				n++
				attempts += s.Attempts
			}
			return true
		}))
		return n, attempts
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return count("runs") >= 3 }, "three periods of the unpaused kind ran")
	n1, _ := admitted("held")
	require.Zero(t, n1, "a pause with Schedules admits no period")
	n2, att := admitted("waits")
	require.Positive(t, n2, "a pause without Schedules lets its schedule admit")
	require.Zero(t, att, "its tasks wait, using no attempt")
	require.Zero(t, count("held")+count("waits"))

	require.NoError(t, store.ResumeKind(ctx, "held", 0))
	require.NoError(t, store.ResumeKind(ctx, "waits", 0))
	natstest.Eventually(t, 20*time.Second, func() bool { return count("held") >= 1 && count("waits") >= n2 }, "both kinds run once resumed")
}
