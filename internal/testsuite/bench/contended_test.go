package bench

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvlock"
)

const (
	contenders = 8   // clients, each on its own connection
	roundSize  = 200 // acquisitions per side per benchmark iteration
)

// acquirer blocks until its client holds the contended key and returns
// the function releasing it.
type acquirer func(ctx context.Context) (release func() error, err error)

// contention accumulates the acquisitions, time and handoff latencies of
// one side (raw or primitive) over all rounds.
type contention struct {
	acquired int64
	elapsed  time.Duration
	handoffs []time.Duration
}

// round runs the clients against one key until target acquisitions have
// been made in total (each client acquires, releases at once and tries
// again). A handoff latency is the time from the start of one holder's
// release to the return of the next holder's acquisition.
func (c *contention) round(b *testing.B, ctx context.Context, clients []acquirer, target int64) {
	var (
		count   atomic.Int64
		lastRel atomic.Int64 // ns since start at which the last release began; -1: none yet
		mu      sync.Mutex
		wg      sync.WaitGroup
		failed  atomic.Value
	)
	lastRel.Store(-1)
	start := time.Now()
	for _, acquire := range clients {
		wg.Go(func() {
			var lat []time.Duration
			defer func() {
				mu.Lock()
				c.handoffs = append(c.handoffs, lat...)
				mu.Unlock()
			}()
			for count.Load() < target {
				release, err := acquire(ctx)
				if err != nil {
					failed.Store(err)
					return
				}
				now := time.Since(start)
				if r := lastRel.Load(); r >= 0 {
					lat = append(lat, now-time.Duration(r))
				}
				count.Add(1)
				lastRel.Store(int64(time.Since(start)))
				if err := release(); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	c.elapsed += time.Since(start)
	c.acquired += count.Load()
	if err := failed.Load(); err != nil {
		b.Fatalf("contended round: %v", err)
	}
}

func (c *contention) rate() float64 { return float64(c.acquired) / c.elapsed.Seconds() }

// rawContender is the raw watch-and-retry loop: publish-create at the
// newest delete marker seen; on a conflict wait for the watch to report
// a newer marker and try again.
type rawContender struct {
	r      *rawLock
	latest atomic.Uint64 // newest delete/expiry marker revision the watch saw
	notify chan struct{} // signalled after latest changes
	// conflicts counts failed acquisition publishes (shared by all raw
	// clients of one benchmark).
	conflicts *atomic.Int64
}

func newRawContender(b *testing.B, js jetstream.JetStream, bucket, key string, size int, conflicts *atomic.Int64) *rawContender {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	kv, err := js.KeyValue(ctx, bucket)
	require.NoError(b, err)
	w, err := kv.Watch(ctx, key, jetstream.UpdatesOnly())
	require.NoError(b, err)
	c := &rawContender{r: newRawLock(js, bucket, key, size, benchTTL), notify: make(chan struct{}, 1), conflicts: conflicts}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case e := <-w.Updates():
				if e != nil && e.Operation() != jetstream.KeyValuePut && e.Revision() > c.latest.Load() {
					c.latest.Store(e.Revision())
					select {
					case c.notify <- struct{}{}:
					default:
					}
				}
			case <-done:
				return
			}
		}
	}()
	b.Cleanup(func() {
		_ = w.Stop()
		cancel()
		close(done)
		<-stopped
	})
	return c
}

func (c *rawContender) acquire(ctx context.Context) (func() error, error) {
	for {
		c.r.marker = max(c.r.marker, c.latest.Load())
		rev, err := c.r.acquire(ctx)
		if err == nil {
			return func() error { return c.r.release(ctx, rev) }, nil
		}
		if !rawConflict(err) {
			return nil, err
		}
		c.conflicts.Add(1)
		select {
		case <-c.notify:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// BenchmarkContended: 8 clients (own connections) on one key, each
// acquiring and releasing in a loop, against 8 raw watch-and-retry
// clients on a key of a bucket configured alike; rounds of 200 acquisitions
// alternate between the two. Target acq/s x_raw >= 0.8; handoff latency
// p50/p99; in fair mode wake-ups per release (expect 1).
func BenchmarkContended(b *testing.B) {
	for _, mode := range []string{"kvlease", "kvlock", "kvlock-fair"} {
		b.Run(mode, func(b *testing.B) {
			n := newServer(b, false)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			var (
				prim    []acquirer
				lockers []*kvlock.Locker
				mgrs    []*kvlease.Manager
				bucket  string
			)
			for range contenders {
				js := n.NewJS(b)
				switch mode {
				case "kvlease":
					m := newManager(b, js)
					mgrs = append(mgrs, m)
					bucket = m.Bucket()
					leases, err := benchFamily.Bind(m)
					require.NoError(b, err)
					prim = append(prim, func(ctx context.Context) (func() error, error) {
						g, _, err := leases.Acquire(ctx, "c", benchTTL, time.Minute)
						if err != nil {
							return nil, err
						}
						return func() error { return g.Release(ctx) }, nil
					})
				default:
					l := newLocker(b, js, kvlock.Config{TTL: benchTTL, Fair: mode == "kvlock-fair"})
					bucket = l.Manager().Bucket()
					lockers = append(lockers, l)
					mgrs = append(mgrs, l.Manager())
					prim = append(prim, func(ctx context.Context) (func() error, error) {
						k, err := l.Acquire(ctx, "c")
						if err != nil {
							return nil, err
						}
						return func() error { return k.Release(ctx) }, nil
					})
				}
			}
			// Size the raw value like the primitive's.
			release, err := prim[0](ctx)
			require.NoError(b, err)
			size := heldValueLen(b, n, bucket, mode)
			require.NoError(b, release())
			// The raw clients use a bucket of their own, configured like the
			// lease bucket: kvlease's managers watch their whole bucket, and
			// raw traffic in it would slow the raw rounds by the managers'
			// work, not the raw loop's.
			_, err = n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "rawlease", History: 1, LimitMarkerTTL: time.Minute})
			require.NoError(b, err)
			var (
				raw          []acquirer
				rawConflicts atomic.Int64
			)
			for range contenders {
				raw = append(raw, newRawContender(b, n.NewJS(b), "rawlease", "c", size, &rawConflicts).acquire)
			}
			wakeups := func() (w uint64) {
				for _, l := range lockers {
					w += l.Stats().FairWakeups
				}
				return w
			}
			contended := func() (c uint64) {
				for _, m := range mgrs {
					c += m.Stats().Contended
				}
				return c
			}
			var r, p contention
			w0, c0, rc0 := wakeups(), contended(), rawConflicts.Load()
			var pairs []float64 // per pair of rounds: primitive rate / raw rate
			for b.Loop() {
				r0, p0 := r, p
				r.round(b, ctx, raw, roundSize)
				p.round(b, ctx, prim, roundSize)
				rr := float64(r.acquired-r0.acquired) / (r.elapsed - r0.elapsed).Seconds()
				pr := float64(p.acquired-p0.acquired) / (p.elapsed - p0.elapsed).Seconds()
				pairs = append(pairs, pr/rr)
			}
			b.ReportMetric(float64(p.elapsed.Nanoseconds())/float64(p.acquired), "ns/op")
			b.ReportMetric(p.rate(), "acq/s")
			b.ReportMetric(r.rate(), "raw-acq/s")
			b.ReportMetric(p.rate()/r.rate(), "x_raw")
			// The median over pairs of rounds: a burst of other work on a
			// shared machine slows whichever side's round it falls in, which
			// moves x_raw far more than this.
			slices.Sort(pairs)
			b.ReportMetric(pairs[len(pairs)/2], "x_raw_p50")
			// Failed attempts (the key was held) per acquisition.
			b.ReportMetric(float64(contended()-c0)/float64(p.acquired), "conflicts/acq")
			b.ReportMetric(float64(rawConflicts.Load()-rc0)/float64(r.acquired), "raw-conflicts/acq")
			b.ReportMetric(float64(percentile(p.handoffs, 50).Microseconds()), "p50-handoff-us")
			b.ReportMetric(float64(percentile(p.handoffs, 99).Microseconds()), "p99-handoff-us")
			b.ReportMetric(float64(percentile(r.handoffs, 50).Microseconds()), "raw-p50-handoff-us")
			b.ReportMetric(float64(percentile(r.handoffs, 99).Microseconds()), "raw-p99-handoff-us")
			if mode == "kvlock-fair" {
				b.ReportMetric(float64(wakeups()-w0)/float64(p.acquired), "wakeups/release")
			}
		})
	}
}

// heldValueLen returns the value size of the contended key "c" while the
// benchmark's first client holds it.
func heldValueLen(b *testing.B, n *natstest.Node, bucket, mode string) int {
	b.Helper()
	key := "bench.c"
	if mode != "kvlease" {
		key = "lock.l.c"
	}
	return valueLen(b, n.JS, bucket, key)
}

// rawConflict reports a lost compare-and-set of a raw publish: API error
// 10071 (wrong last sequence; R1 streams, which these benchmarks use).
func rawConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}
