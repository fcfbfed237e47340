package cronspec

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Spec is a parsed schedule: a fixed interval aligned to the Unix epoch
// (@every), or a five-field cron pattern. The zero Spec never fires.
type Spec struct {
	every time.Duration
	cron  *cronSpec
	loc   *time.Location
}

// cronSpec holds one bit set per field: minute, hour, day of month,
// month, day of week.
type cronSpec struct {
	min, hour, dom, month, dow uint64
	domStar, dowStar           bool
}

var predefined = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// Parse parses "@every <duration>" (at least one second), a
// predefined name (@hourly, @daily, ...) or "m h dom mon dow" with *,
// lists, ranges and steps. Times of cron patterns are in loc.
func Parse(s string, loc *time.Location) (Spec, error) {
	s = strings.TrimSpace(s)
	if loc == nil {
		loc = time.UTC
	}
	if d, ok := strings.CutPrefix(s, "@every "); ok {
		every, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || every < time.Second {
			return Spec{}, fmt.Errorf("schedule %q: @every needs a duration of at least 1s", s)
		}
		return Spec{every: every, loc: loc}, nil
	}
	if p, ok := predefined[s]; ok {
		s = p
	}
	f := strings.Fields(s)
	if len(f) != 5 {
		return Spec{}, fmt.Errorf("schedule %q: want 5 cron fields, @every or a predefined name", s)
	}
	var c cronSpec
	var err error
	bounds := [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}}
	dst := [5]*uint64{&c.min, &c.hour, &c.dom, &c.month, &c.dow}
	for i := range f {
		if *dst[i], err = parseField(f[i], bounds[i][0], bounds[i][1]); err != nil {
			return Spec{}, fmt.Errorf("schedule %q field %d: %v", s, i+1, err)
		}
	}
	if c.dow&(1<<7) != 0 {
		c.dow |= 1 // 7 is Sunday too
	}
	c.domStar, c.dowStar = f[2] == "*", f[4] == "*"
	// Any searchSpan holds every date that exists (29 February
	// included), whatever the zone: a pattern that matches none in one,
	// such as "0 0 31 2 *", would never run.
	if from := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC); c.calendarNext(from, from.Add(searchSpan)).IsZero() {
		return Spec{}, fmt.Errorf("schedule %q never runs: no date matches it", s)
	}
	return Spec{cron: &c, loc: loc}, nil
}

func parseField(f string, lo, hi int) (uint64, error) {
	var bits uint64
	for _, part := range strings.Split(f, ",") {
		rng, stepS, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepS)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("bad step %q", stepS)
			}
			// A step beyond the field's range would only name its
			// first value; one near the int range made v overflow and
			// wrap to other values (30/9223372036854775807 fired at
			// minutes 30, 28, 26, ...).
			if n > hi-lo+1 {
				return 0, fmt.Errorf("step %d is larger than the field's range %d-%d", n, lo, hi)
			}
			step = n
		}
		a, b := lo, hi
		if rng != "*" {
			x, y, isRange := strings.Cut(rng, "-")
			var err error
			if a, err = strconv.Atoi(x); err != nil {
				return 0, fmt.Errorf("bad value %q", x)
			}
			b = a
			if isRange {
				if b, err = strconv.Atoi(y); err != nil {
					return 0, fmt.Errorf("bad value %q", y)
				}
			} else if hasStep {
				b = hi
			}
		}
		if a < lo || b > hi || a > b {
			return 0, fmt.Errorf("%q outside %d-%d", part, lo, hi)
		}
		for v := a; ; v += step {
			bits |= 1 << uint(v)
			if b-v < step {
				break
			}
		}
	}
	return bits, nil
}

// Next returns the first period start strictly after t (zero for the
// zero Spec).
func (s Spec) Next(t time.Time) time.Time {
	if s.every > 0 {
		n := t.UnixNano() / int64(s.every)
		return time.Unix(0, (n+1)*int64(s.every)).In(s.loc)
	}
	if s.cron == nil {
		return time.Time{}
	}
	return s.cron.next(t, s.loc)
}

// Latest returns the last period start in [from, now], or the zero time
// when no period starts in it (from after now included). For a from that
// is a period start not after now, that is from or a later start.
func (s Spec) Latest(from, now time.Time) time.Time {
	// The first period start at or after from: Next is strictly after
	// its argument, and period starts are whole nanoseconds.
	first := s.Next(from.Add(-time.Nanosecond))
	if first.IsZero() || first.After(now) {
		return time.Time{}
	}
	if s.every > 0 {
		// Rounding now down to the interval finds a start that is not
		// before first, which starts in the range.
		return time.Unix(0, now.UnixNano()/int64(s.every)*int64(s.every)).In(s.loc)
	}
	last := first
	for n := s.Next(first); !n.IsZero() && !n.After(now); n = s.Next(n) {
		last = n
	}
	return last
}

func (c *cronSpec) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<uint(t.Day())) != 0
	dow := c.dow&(1<<uint(t.Weekday())) != 0
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}

// searchSpan is how far after its argument Next looks: every date that
// exists occurs in any span this long, 29 February too (eight years
// apart across 2100).
const searchSpan = (8*366 + 2) * 24 * time.Hour

// maxShift bounds how far apart two instants that show the same wall
// time can be: the largest change of a zone's offset (about a day, when
// a zone crossed the date line).
const maxShift = 48 * time.Hour

// next returns the first instant after t at which loc's clock shows a
// minute the pattern names, or at which a gap that skipped such a minute
// ends, or the zero time when none does within searchSpan. It walks the
// zone's spans of one offset forward from t (span): inside one, the wall
// time is the instant plus the offset, so the pattern is matched on the
// calendar alone (calendarNext), where time.Date never moves back.
// Normalizing a wall time that a gap skips moved the old search back an
// hour, forever.
func (c *cronSpec) next(t time.Time, loc *time.Location) time.Time {
	limit := t.Add(searchSpan)
	for lo := t.Add(time.Nanosecond); lo.Before(limit); {
		start, end, off := span(lo, loc)
		hi := limit
		if !end.IsZero() && end.Before(limit) {
			hi = end
		}
		// lo is the end of a gap when the offset just before it was
		// smaller: the wall times between were never shown, and the
		// ones the pattern names fire here, once (as cron does for a
		// daily job, which would otherwise miss that day).
		if _, o := lo.Add(-time.Nanosecond).In(loc).Zone(); time.Duration(o)*time.Second < off &&
			c.skippedIn(wall(lo, time.Duration(o)*time.Second), wall(lo, off), lo, loc) {
			return lo.In(loc)
		}
		for from := wall(lo, off); ; {
			w := c.calendarNext(from, wall(hi, off))
			if w.IsZero() {
				break
			}
			// A wall time a fall-back shows again fires once: at its
			// first showing, in an earlier span.
			shown, until := shownBefore(w, start, w.Add(-off), loc)
			if !shown {
				return w.Add(-off).In(loc)
			}
			from = until
		}
		lo = hi
	}
	return time.Time{}
}

// skippedIn reports whether the pattern names a wall time in [from, hi),
// the wall times a gap that ends at instant end skipped, that no earlier
// span showed (one shown before fired then, or was passed).
func (c *cronSpec) skippedIn(from, hi, end time.Time, loc *time.Location) bool {
	for {
		w := c.calendarNext(from, hi)
		if w.IsZero() {
			return false
		}
		shown, until := shownBefore(w, end, end, loc)
		if !shown {
			return true
		}
		from = until
	}
}

// span returns the span of one offset of loc around u: start <= u < end
// (a zero start or end is unbounded), and the offset. Go's ZoneBounds
// can end a span before u (on the last day of a leap year past a zone's
// last listed change, golang/go#81583), which would stall the search:
// such a span ends at u's next whole hour instead, and the next span is
// looked up from there.
func span(u time.Time, loc *time.Location) (start, end time.Time, off time.Duration) {
	at := u.In(loc)
	start, end = at.ZoneBounds()
	_, o := at.Zone()
	if !end.IsZero() && !end.After(u) {
		end = u.Truncate(time.Hour).Add(time.Hour)
	}
	if start.After(u) {
		start = u.Truncate(time.Hour)
	}
	return start, end, time.Duration(o) * time.Second
}

// wall is the wall time an offset of off shows at instant u, as a UTC
// time (the calendar with no zone).
func wall(u time.Time, off time.Duration) time.Time { return u.Add(off).UTC() }

// shownBefore reports whether loc's clock showed wall time w before
// start, the start of the span of one offset that shows it at u, and
// if so the wall time that earlier span ended on: it showed every wall
// time from w up to that one too.
func shownBefore(w, start, u time.Time, loc *time.Location) (bool, time.Time) {
	for end := start; !end.IsZero() && end.After(u.Add(-maxShift)); {
		pstart, _, off := span(end.Add(-time.Nanosecond), loc)
		if at := w.Add(-off); at.Before(end) && (pstart.IsZero() || !at.Before(pstart)) {
			return true, wall(end, off)
		}
		end = pstart
	}
	return false, time.Time{}
}

// calendarNext returns the first whole minute in [from, hi) that the
// pattern names, both UTC times read as wall times, or the zero time.
// Each step moves to the next month, day, hour or minute that may match,
// so the steps are at most about one per day of the range.
func (c *cronSpec) calendarNext(from, hi time.Time) time.Time {
	w := from.Truncate(time.Minute)
	if w.Before(from) {
		w = w.Add(time.Minute)
	}
	for w.Before(hi) {
		y, mo, d := w.Date()
		h, m := w.Hour(), w.Minute()
		switch {
		case c.month&(1<<uint(mo)) == 0:
			if n := firstFrom(c.month, int(mo)); n > 0 {
				w = time.Date(y, time.Month(n), 1, 0, 0, 0, 0, time.UTC)
			} else {
				w = time.Date(y+1, time.January, 1, 0, 0, 0, 0, time.UTC)
			}
		case !c.dayMatches(w):
			w = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
		case c.hour&(1<<uint(h)) == 0:
			if n := firstFrom(c.hour, h); n >= 0 {
				w = time.Date(y, mo, d, n, 0, 0, 0, time.UTC)
			} else {
				w = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
			}
		case c.min&(1<<uint(m)) == 0:
			if n := firstFrom(c.min, m); n >= 0 {
				w = time.Date(y, mo, d, h, n, 0, 0, time.UTC)
			} else {
				w = time.Date(y, mo, d, h+1, 0, 0, 0, time.UTC)
			}
		default:
			return w
		}
	}
	return time.Time{}
}

// firstFrom returns the first value at or above v set in set, or -1.
func firstFrom(set uint64, v int) int {
	if rest := set >> uint(v); rest != 0 {
		return v + bits.TrailingZeros64(rest)
	}
	return -1
}
