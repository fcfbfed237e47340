package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// triesLog is a slog handler that counts, per task key, the worker's
// lines for a try that failed of a claim or of what a claim needs (the
// worker's lease, a group slot, a claim's lease): one line per try.
type triesLog struct {
	mu    sync.Mutex
	n     map[string]int
	first time.Time
}

func (l *triesLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *triesLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *triesLog) WithGroup(string) slog.Handler            { return l }
func (l *triesLog) Handle(_ context.Context, r slog.Record) error {
	switch r.Message {
	case "worker: claiming", "worker: acquiring the worker's lease", "worker: acquiring a group slot", "worker: reading a claim's lease":
	default:
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "key" {
			l.mu.Lock()
			if l.first.IsZero() {
				l.first = time.Now()
			}
			l.n[a.Value.String()]++
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *triesLog) counts() (map[string]int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]int, len(l.n))
	for k, v := range l.n {
		m[k] = v
	}
	return m, l.first
}

// A claim that fails transiently is tried again only after its pause
// (claimRetry: 250 ms doubling to 1 s), however the attempt ends: while
// the ledger's stream answers every write at once with 503, as JetStream
// does while a stream has no quorum, each key's claim is tried a number
// of times the pauses allow, not hundreds of times a second; every task
// completes once the stream answers again.
func TestFailedClaimKeepsItsPause(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	tries := &triesLog{n: map[string]int{}}
	w := e.worker(worker.Config{Concurrency: 2, Logger: slog.New(tries)}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(context.Context, *worker.Task) error { return nil }))
	})
	// Due a moment after the stream stops answering.
	due := time.Now().Add(2 * time.Second)
	var keys []kvledger.IdempotencyKey
	for i := range 5 {
		k := kvledger.IdempotencyKey(fmt.Sprintf("k%d", i))
		e.submit(kvledger.Submission{Key: k, Kind: "job", RunAt: due})
		keys = append(keys, k)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return worker.Timers(w) == 5 }, "the tasks wait for their time")
	heal := natstest.Unavailable(t, n, e.led.Store().(*kvledger.KVStore).Name())
	const outage = 3 * time.Second
	natstest.Eventually(t, 20*time.Second, func() bool {
		_, first := tries.counts()
		return !first.IsZero() && time.Since(first) >= outage
	}, "claims fail for the outage's length")
	heal()
	healed := time.Now()
	for k, s := range e.waitFinal(30*time.Second, keys...) {
		require.Equal(t, kvledger.StatusCompleted, s.Status, "%s", k)
	}
	counts, first := tries.counts()
	failing := healed.Sub(first)
	// The tries the pauses allow while claims failed: at 0, 0.25, 0.75
	// and 1.75 s, then one a second; one more for a try under way when
	// the stream answered again.
	bound := 5 + int(failing/time.Second)
	t.Logf("tries per key in %v of failing claims: %v (bound %d); all completed %v after the stream answered again",
		failing.Round(time.Millisecond), counts, bound, time.Since(healed).Round(time.Millisecond))
	require.NotEmpty(t, counts, "claims failed during the outage")
	for k, c := range counts {
		require.LessOrEqual(t, c, bound, "tries of %s", k)
	}
}
