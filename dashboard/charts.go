package dashboard

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/natscoord/natscoord/kvledger"
)

// The overview's charts cover the last chartMinutes calendar minutes, the
// current one last.
const (
	chartMinutes = 60
	chartWindow  = chartMinutes * time.Minute
	chartSeconds = int64(chartWindow / time.Second)
	// chartKinds is how many kinds the backlog chart names; the others
	// are drawn together as "other kinds".
	chartKinds = 8
	// sampleKinds is how many kinds one backlog sample keeps by name
	// (the largest), the rest summed: enough that the chart's top
	// chartKinds over the hour are named in nearly every minute.
	sampleKinds = 2 * chartKinds
)

// finishes counts the ledger's finished tasks, its ledger.completed
// events (kvledger.CompletedEvent; the record's status tells a success
// from a failure), by the second of the event's time (the write's
// UpdatedAt, the writer's clock), over the last hour. A cancellation is
// not a completion and is not counted. It is fed from the bucket's
// stream only (onEventMsg): at start the hour's stored events, then each
// new one. Memory is fixed: one slot per second of the hour.
type finishes struct {
	mu   sync.Mutex
	secs [chartSeconds]finishSecond
}

type finishSecond struct {
	sec               int64
	completed, failed int32
}

// add counts one completion at t, judged at now: an event older than the
// window is dropped, and one whose writer's clock runs ahead of ours is
// counted now.
func (f *finishes) add(t, now time.Time, failed bool) {
	if t.After(now) {
		t = now
	}
	s := t.Unix()
	if s <= now.Unix()-chartSeconds {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b := &f.secs[s%chartSeconds]
	if b.sec != s {
		*b = finishSecond{sec: s}
	}
	if failed {
		b.failed++
	} else {
		b.completed++
	}
}

// count returns the completions, successful or failed, in the d before
// now (d at most the window).
func (f *finishes) count(now time.Time, d time.Duration) int {
	from, to := now.Add(-d).Unix(), now.Unix()
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, b := range f.secs {
		if b.sec > from && b.sec <= to {
			n += int(b.completed + b.failed)
		}
	}
	return n
}

// finishMinute is one column of the finished chart.
type finishMinute struct {
	Completed, Failed int
}

// perMinute returns the completions of each chart column: the minutes
// from first (a minute's start) to now, oldest first.
func (f *finishes) perMinute(first, now time.Time) [chartMinutes]finishMinute {
	var out [chartMinutes]finishMinute
	from, to := first.Unix(), now.Unix()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.secs {
		if b.sec < from || b.sec > to || b.sec == 0 {
			continue
		}
		i := (b.sec - from) / 60
		out[i].Completed += int(b.completed)
		out[i].Failed += int(b.failed)
	}
	return out
}

// any reports whether the window before now holds a completion.
func (f *finishes) any(now time.Time) bool { return f.count(now, chartWindow) > 0 }

// kindCount is a kind's backlog in one minute.
type kindCount struct {
	Kind string
	N    int
}

// backlogSample is the ready backlog as one minute ended: the records in
// phase pending (kvledger.PhasePending) per kind, the sampleKinds largest
// by name and the rest summed in other.
type backlogSample struct {
	minute int64 // the minute's start, Unix seconds; 0: no sample
	kinds  []kindCount
	other  int
}

// backlogs keeps one sample per minute of the window, taken by the chart
// clock at each minute's end from the task view (no read of NATS): the
// dashboard keeps no backlog from before it started.
type backlogs struct {
	mu      sync.Mutex
	samples [chartMinutes]backlogSample
}

// sampleOf bounds byKind to a sample of minute (its start).
func sampleOf(minute time.Time, byKind map[string]int) backlogSample {
	s := backlogSample{minute: minute.Unix()}
	for k, n := range byKind {
		s.kinds = append(s.kinds, kindCount{k, n})
	}
	slices.SortFunc(s.kinds, func(a, b kindCount) int {
		return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Kind, b.Kind))
	})
	if len(s.kinds) > sampleKinds {
		for _, kc := range s.kinds[sampleKinds:] {
			s.other += kc.N
		}
		s.kinds = slices.Clip(s.kinds[:sampleKinds])
	}
	return s
}

func (b *backlogs) record(s backlogSample) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.samples[(s.minute/60)%chartMinutes] = s
}

// window returns the sample of each minute from first on (a zero sample
// where none was taken), oldest first.
func (b *backlogs) window(first time.Time) [chartMinutes]backlogSample {
	var out [chartMinutes]backlogSample
	from := first.Unix()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.samples {
		if s.minute >= from && s.minute < from+chartSeconds {
			out[(s.minute-from)/60] = s
		}
	}
	return out
}

// any reports whether a sample of the window from first counted a task.
func (b *backlogs) any(first time.Time) bool {
	for _, s := range b.window(first) {
		if s.other > 0 || len(s.kinds) > 0 {
			return true
		}
	}
	return false
}

// pendingByKind counts the records in phase pending at now per kind, as
// kvledger.Tally counts them (the overview's pending card).
func (v *taskView) pendingByKind(now time.Time) map[string]int {
	c := v.phases.Counts(now)
	out := make(map[string]int, len(c.ByKind))
	for kind, byPhase := range c.ByKind {
		if n := byPhase[kvledger.PhasePending]; n > 0 {
			out[kind] = n
		}
	}
	return out
}

// chartClock samples the backlog as each minute ends and, while the
// window holds anything to show, pushes "chart" so open overviews move
// their charts along; an idle hour sends nothing. It runs on
// Config.Clock's timers (a manual clock's Advance runs it at each minute
// boundary it passes) and ends with Close, which waits for a sample in
// progress.
type chartClock struct {
	mu     sync.Mutex
	stop   func() bool
	closed bool
}

func (h *Handler) startChartClock() {
	c := &h.chartClock
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scheduleLocked(h)
	h.stops = append(h.stops, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.closed = true
		c.stop()
	})
}

// scheduleLocked sets the timer for the next minute boundary.
func (c *chartClock) scheduleLocked(h *Handler) {
	now := h.cfg.Clock.Now()
	next := now.Truncate(time.Minute).Add(time.Minute)
	c.stop = h.cfg.Clock.AfterFunc(next.Sub(now), func() { c.tick(h, next) })
}

// tick takes the sample of the minute that ended at boundary.
func (c *chartClock) tick(h *Handler, boundary time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	now := h.cfg.Clock.Now()
	h.backlog.record(sampleOf(boundary.Add(-time.Minute), h.tasks.pendingByKind(now)))
	if first := chartFirst(now); h.finishes.any(now) || h.backlog.any(first) {
		h.broker.publish(push{Type: "chart", Data: []byte("{}")})
	}
	c.scheduleLocked(h)
}

// chartFirst is the start of the chart's first minute at now.
func chartFirst(now time.Time) time.Time {
	return now.Truncate(time.Minute).Add(-(chartMinutes - 1) * time.Minute)
}
