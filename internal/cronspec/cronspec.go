// Package cronspec parses schedule specs: "@every <duration>", the
// predefined names (@hourly, @daily...) and five-field cron patterns. It
// is the one parser of the runtime's schedules: kvledger checks a stored
// schedule's spec with it when the schedule is declared, and the worker
// (kvledger/worker) computes each schedule's periods with it.
package cronspec

import (
	"fmt"
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
	sp := Spec{cron: &c, loc: loc}
	if sp.Next(time.Now()).IsZero() {
		// next searches five years ahead, which covers every date that
		// exists (29 February included): a pattern that finds none, such
		// as "0 0 31 2 *", would never run.
		return Spec{}, fmt.Errorf("schedule %q never runs: no date matches it", s)
	}
	return sp, nil
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
	return s.cron.next(t.In(s.loc))
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

func (c *cronSpec) next(t time.Time) time.Time {
	loc := t.Location()
	t = t.Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		switch {
		case c.month&(1<<uint(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
		case !c.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		case c.hour&(1<<uint(t.Hour())) == 0:
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, loc)
		case c.min&(1<<uint(t.Minute())) == 0:
			t = t.Add(time.Minute)
		default:
			return t
		}
	}
	return time.Time{}
}
