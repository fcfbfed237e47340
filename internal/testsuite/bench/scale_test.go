package bench

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlease"
)

// BenchmarkHold10k: one manager holds 10,000 leases at TTL 10s, renewing
// each every TTL/3, for NATSCOORD_BENCH_HOLD (default 60s). The server
// runs in a child process, so heap, RSS and goroutines are the client's.
// Goals: goroutines independent of the lease count, <= 2 KiB heap per held
// lease, one renewal per lease per renew interval. goroutines-held is
// sampled after the hold, goroutines-max once a second during it (it
// includes renewals in flight); rss-MiB is the whole test process. It runs once whatever
// -benchtime says (unless the hold is shorter than -benchtime).
func BenchmarkHold10k(b *testing.B) {
	const ttl = 10 * time.Second
	js, count, hold := scaleSetup(b)
	interval := ttl / 3
	ctx := context.Background()
	m := newManager(b, js)
	leases, err := benchFamily.Bind(m)
	require.NoError(b, err)
	g, ok, err := leases.TryAcquire(ctx, "warm", ttl) // warm up every code path
	require.NoError(b, err)
	require.True(b, ok)
	require.NoError(b, g.StartRenewing(0))
	require.NoError(b, g.Renew(ctx))
	require.NoError(b, g.Release(ctx))

	heap0, rss0, gor0 := measure()
	start := time.Now()
	guards := make([]*kvlease.Guard, count)
	fillN(b, 16, count, func(i int) {
		g, ok, err := leases.TryAcquire(ctx, "lease-"+strconv.Itoa(i), ttl)
		if err != nil || !ok {
			b.Errorf("TryAcquire %d: %v %v", i, ok, err)
			return
		}
		if err := g.StartRenewing(0); err != nil {
			b.Errorf("StartRenewing: %v", err)
		}
		guards[i] = g
	})
	if b.Failed() {
		b.FailNow()
	}
	b.Logf("acquired %d leases in %v", count, time.Since(start).Round(time.Millisecond))

	// Hold: sample goroutines and RSS every second, count renewals.
	st0 := m.Stats()
	held, maxGor, maxRSS := sampleHold(hold)
	st1 := m.Stats()
	heap1, rss1, gor1 := measure()
	renewals := float64(st1.Renewals - st0.Renewals)
	for i, g := range guards {
		if err := g.Err(); err != nil {
			b.Fatalf("lease %d: %v", i, err)
		}
	}
	require.Zero(b, st1.Lost-st0.Lost, "leases lost")

	holdMetrics{unit: "lease", count: count, held: held, gor0: gor0, gor1: gor1, maxGor: maxGor,
		heap0: heap0, heap1: heap1, rss1: rss1, maxRSS: maxRSS}.report(b)
	b.ReportMetric(float64(rss1-rss0)/float64(count), "rss-B/lease")
	b.ReportMetric(renewals/held.Seconds(), "renewals/s")
	b.ReportMetric(renewals/(float64(count)*held.Seconds()/interval.Seconds()), "renewals/lease/interval")
	b.ReportMetric(float64(st1.RenewFailures-st0.RenewFailures), "renew-failures")
}

// sampleHold lets hold pass while sampling the goroutines and the RSS once
// a second, and returns how long it took and the largest samples (what a
// scale benchmark reports as goroutines-max and rss-peak-MiB).
func sampleHold(hold time.Duration) (held time.Duration, maxGoroutines int, maxRSS int64) {
	start := time.Now()
	for time.Since(start) < hold {
		time.Sleep(time.Second) // sampling cadence of a measurement, not a wait for a condition
		maxGoroutines = max(maxGoroutines, runtime.NumGoroutine())
		maxRSS = max(maxRSS, rssBytes())
	}
	return time.Since(start), maxGoroutines, maxRSS
}

// holdMetrics is what both scale benchmarks measure of count items
// (unit: "lease" or "lock") held for held: the goroutines before, after
// and at most during the hold, the heap before and after, the RSS after.
type holdMetrics struct {
	unit               string
	count              int
	held               time.Duration
	gor0, gor1, maxGor int
	heap0, heap1, rss1 int64
	maxRSS             int64 // the highest RSS sampled during the hold
}

// report reports the metrics the scale benchmarks share, under one set of
// names.
func (h holdMetrics) report(b *testing.B) {
	b.Helper()
	b.ReportMetric(float64(h.held.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(h.count), h.unit+"s")
	b.ReportMetric(float64(h.gor0), "goroutines-idle")
	b.ReportMetric(float64(h.gor1), "goroutines-held")
	b.ReportMetric(float64(h.maxGor), "goroutines-max")
	b.ReportMetric(float64(h.heap1-h.heap0)/float64(h.count), "heap-B/"+h.unit)
	b.ReportMetric(float64(h.rss1)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(h.maxRSS)/(1<<20), "rss-peak-MiB")
}

// measure returns the live heap after a GC, the RSS after returning free
// memory to the OS (so earlier benchmarks of the process do not count)
// and the goroutines.
func measure() (heap, rss int64, goroutines int) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), rssBytes(), runtime.NumGoroutine()
}

// rssBytes reads VmRSS from /proc/self/status (0 when unavailable).
func rssBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// scaleSetup connects to a server in a child process and reads the
// scale benchmarks' environment: how many leases or locks to hold
// (NATSCOORD_BENCH_LEASES, default 10,000) and for how long
// (NATSCOORD_BENCH_HOLD, default 60s).
func scaleSetup(b *testing.B) (jetstream.JetStream, int, time.Duration) {
	b.Helper()
	count := 10_000
	if s := os.Getenv("NATSCOORD_BENCH_LEASES"); s != "" {
		var err error
		count, err = strconv.Atoi(s)
		require.NoError(b, err)
	}
	hold := envDuration(b, "NATSCOORD_BENCH_HOLD", 60*time.Second)
	nc, err := nats.Connect(childServer(b))
	require.NoError(b, err)
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(b, err)
	return js, count, hold
}
