// Package opstats is how natscoord produces metrics: a Recorder of
// operation counts and latencies, fed by the Observer of kvlock,
// kvlease, kvledger and its task runtime (kvlock.RecorderObserver,
// kvlease.RecorderObserver, kvledger.RecorderObserver,
// worker.RecorderObserver), and WriteText, the one writer of the
// Prometheus text format, which serves a Recorder's Families beside
// counters (CounterVec), values read at scrape time (worker.Stats, the
// dashboard's views) and the Go runtime's (RuntimeFamilies). It needs no
// metrics library: Snapshot gives plain values for a Stats endpoint or a
// test. OpenTelemetry is an adapter of the same observers, in the nested
// modules kvlock/otelobserver and kvledger/worker/otelworker; the nested
// module opstats/promcollector registers Families in a
// prometheus/client_golang registry, read at each scrape.
//
//	rec := opstats.New()
//	locker, _ := kvlock.New(ctx, js, kvlock.Config{Observer: kvlock.RecorderObserver(rec)})
//	http.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
//		w.Header().Set("Content-Type", opstats.TextContentType)
//		_ = opstats.WriteText(w, rec.Families()...)
//	})
//
// Series are keyed by component ("kvlock"), name (the lock family,
// bucket or ledger source), op ("acquire") and outcome ("ok",
// "contended", "error", ...), all low-cardinality: keys of individual
// locks or tasks are never labels. Every Observer of natscoord has one
// shape (see Hooks).
package opstats

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"
)

// DefaultBuckets are the histogram bounds used when New gets none: 100µs
// to 10s, roughly ×2.5 apart.
var DefaultBuckets = []time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// Labels identify one series.
type Labels struct {
	Component, Name, Op, Outcome string
}

// Series is a snapshot of one series.
type Series struct {
	Labels
	Count uint64
	Sum   time.Duration
	Max   time.Duration
	// Buckets are cumulative: Buckets[i] counts durations <= Bounds[i].
	Bounds  []time.Duration
	Buckets []uint64
}

// Mean is Sum/Count (0 without samples).
func (s Series) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / time.Duration(s.Count)
}

// Recorder accumulates series. The zero value is not usable; use New. It
// is safe for concurrent use; Record takes one mutex and allocates only
// the first time a series is seen.
type Recorder struct {
	bounds []time.Duration
	mu     sync.Mutex
	series map[Labels]*series
}

type series struct {
	count    uint64
	sum, max time.Duration
	buckets  []uint64 // per bound, not cumulative
}

// New returns a Recorder with the given histogram bounds (sorted;
// DefaultBuckets when none).
func New(bounds ...time.Duration) *Recorder {
	if len(bounds) == 0 {
		bounds = DefaultBuckets
	}
	b := append([]time.Duration(nil), bounds...)
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	return &Recorder{bounds: b, series: make(map[Labels]*series)}
}

// Record adds one operation that took d.
func (r *Recorder) Record(l Labels, d time.Duration) {
	i := sort.Search(len(r.bounds), func(i int) bool { return d <= r.bounds[i] })
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.series[l]
	if s == nil {
		s = &series{buckets: make([]uint64, len(r.bounds))}
		r.series[l] = s
	}
	s.count++
	s.sum += d
	s.max = max(s.max, d)
	if i < len(s.buckets) {
		s.buckets[i]++
	}
}

// Count returns the number of operations recorded under l.
func (r *Recorder) Count(l Labels) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.series[l]; s != nil {
		return s.count
	}
	return 0
}

// Snapshot returns every series, sorted by labels.
func (r *Recorder) Snapshot() []Series {
	r.mu.Lock()
	out := make([]Series, 0, len(r.series))
	for l, s := range r.series {
		cum := make([]uint64, len(s.buckets))
		var n uint64
		for i, c := range s.buckets {
			n += c
			cum[i] = n
		}
		out = append(out, Series{Labels: l, Count: s.count, Sum: s.sum, Max: s.max, Bounds: r.bounds, Buckets: cum})
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Labels, out[j].Labels
		return fmt.Sprint(a.Component, "\x00", a.Name, "\x00", a.Op, "\x00", a.Outcome) <
			fmt.Sprint(b.Component, "\x00", b.Name, "\x00", b.Op, "\x00", b.Outcome)
	})
	return out
}

// WritePrometheus writes the series in the Prometheus text format as
// natscoord_operations_total (counter) and
// natscoord_operation_duration_seconds (histogram), labelled component,
// name, op and outcome: WriteText of Families.
func (r *Recorder) WritePrometheus(w io.Writer) error { return WriteText(w, r.Families()...) }

// Families returns the series as the two families WritePrometheus writes,
// for a handler that serves them beside others (see WriteText).
func (r *Recorder) Families() []Family {
	snap := r.Snapshot()
	ops := Family{Name: "natscoord_operations_total", Help: "Operations finished, by outcome.", Kind: Counter}
	dur := Family{Name: "natscoord_operation_duration_seconds", Help: "How long operations took.", Kind: Histogram}
	for _, s := range snap {
		ls := labels(s.Labels)
		ops.Samples = append(ops.Samples, Sample{Labels: ls, Value: float64(s.Count)})
		for i, le := range s.Bounds {
			dur.Samples = append(dur.Samples, Sample{Suffix: "_bucket", Labels: withLE(ls, strconv.FormatFloat(le.Seconds(), 'g', -1, 64)), Value: float64(s.Buckets[i])})
		}
		dur.Samples = append(dur.Samples,
			Sample{Suffix: "_bucket", Labels: withLE(ls, "+Inf"), Value: float64(s.Count)},
			Sample{Suffix: "_sum", Labels: ls, Value: s.Sum.Seconds()},
			Sample{Suffix: "_count", Labels: ls, Value: float64(s.Count)})
	}
	return []Family{ops, dur}
}

func labels(l Labels) []Label {
	return []Label{{"component", l.Component}, {"name", l.Name}, {"op", l.Op}, {"outcome", l.Outcome}}
}

func withLE(ls []Label, le string) []Label {
	return append(ls[:len(ls):len(ls)], Label{"le", le})
}
