package cronspec

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // zones load on a machine without /usr/share/zoneinfo too

	"github.com/stretchr/testify/require"
)

// nextWithin is sp.Next(from), failing the test when it has not returned
// within 10 s: the search used to spin forever at a spring-forward gap,
// and a test of it must fail rather than hang.
func nextWithin(t testing.TB, sp Spec, from time.Time) time.Time {
	t.Helper()
	done := make(chan time.Time, 1)
	go func() { done <- sp.Next(from) }()
	select {
	case n := <-done:
		return n
	case <-time.After(10 * time.Second):
		t.Fatalf("Next(%s) did not return within 10s", from)
		return time.Time{}
	}
}

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// The examples of issue 34 item 1 hung; each now returns the first
// period. A wall time inside a spring-forward gap does not occur: it
// fires at the gap's end, once however many the gap skipped (cron's rule
// for a daily job, which would otherwise miss that day). One a fall-back
// repeats fires once, at its first occurrence.
func TestNextAcrossDSTChanges(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	for _, c := range []struct{ spec, zone, from, want string }{
		// New York springs forward on 2027-03-14: 02:00 EST is 03:00 EDT
		// (07:00 UTC).
		{"0 5 * * *", "America/New_York", "2027-03-13T12:00:00Z", "2027-03-14T09:00:00Z"},
		{"0 5 * * *", "America/New_York", "2027-03-14T05:00:00Z", "2027-03-14T09:00:00Z"},
		{"@daily", "America/New_York", "2027-03-13T12:00:00Z", "2027-03-14T05:00:00Z"},
		{"@daily", "America/New_York", "2027-03-14T05:00:00Z", "2027-03-15T04:00:00Z"},
		{"0 * * * *", "America/New_York", "2027-03-14T06:00:00Z", "2027-03-14T07:00:00Z"},  // 01:00 EST, then 03:00 EDT once
		{"30 2 * * *", "America/New_York", "2027-03-13T12:00:00Z", "2027-03-14T07:00:00Z"}, // 02:30 does not occur: 03:00 EDT
		{"30 2 * * *", "America/New_York", "2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z"},
		{"30 2 * * *", "America/New_York", "2027-03-14T06:59:59Z", "2027-03-14T07:00:00Z"},
		{"15,45 2 * * *", "America/New_York", "2027-03-13T12:00:00Z", "2027-03-14T07:00:00Z"}, // two skipped, one firing
		{"15,45 2 * * *", "America/New_York", "2027-03-14T07:00:00Z", "2027-03-15T06:15:00Z"},
		{"*/15 * * * *", "America/New_York", "2027-03-14T06:45:00Z", "2027-03-14T07:00:00Z"}, // 01:45 EST, 03:00 EDT, 03:15
		{"*/15 * * * *", "America/New_York", "2027-03-14T07:00:00Z", "2027-03-14T07:15:00Z"},
		{"5 * * * *", "America/New_York", "2027-03-14T06:05:00Z", "2027-03-14T07:00:00Z"}, // 02:05 skipped: 03:00, then 03:05
		{"5 * * * *", "America/New_York", "2027-03-14T07:00:00Z", "2027-03-14T07:05:00Z"},
		{"@every 2h", "America/New_York", "2027-03-14T06:00:00Z", "2027-03-14T08:00:00Z"},  // instants: no firing at the gap's end
		{"30 2 * * 1", "America/New_York", "2027-03-13T12:00:00Z", "2027-03-15T06:30:00Z"}, // a Sunday: not its day
		// The README's example: Paris springs forward on 2027-03-28,
		// 02:00 CET is 03:00 CEST (01:00 UTC).
		{"30 2 * * *", "Europe/Paris", "2027-03-27T12:00:00Z", "2027-03-28T01:00:00Z"},
		{"30 2 * * *", "Europe/Paris", "2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z"},
		// Santiago skips midnight: 2027-09-05 00:00 -04 is 01:00 -03.
		{"0 9 * * 1", "America/Santiago", "2027-09-02T12:00:00Z", "2027-09-06T12:00:00Z"},
		{"0 9 * * 1", "America/Santiago", "2027-09-04T12:00:00Z", "2027-09-06T12:00:00Z"},
		{"@daily", "America/Santiago", "2027-09-04T12:00:00Z", "2027-09-05T04:00:00Z"}, // no midnight on the 5th: 01:00
		{"@daily", "America/Santiago", "2027-09-05T04:00:00Z", "2027-09-06T03:00:00Z"},
		{"0 1 * * *", "America/Santiago", "2027-09-04T12:00:00Z", "2027-09-05T04:00:00Z"},
		{"0 0 * * 0", "America/Santiago", "2027-09-04T12:00:00Z", "2027-09-05T04:00:00Z"}, // Sunday the 5th's midnight
		// New York falls back on 2027-11-07: 01:00-01:59 occurs twice
		// (EDT, then EST) and fires once, in EDT.
		{"30 1 * * *", "America/New_York", "2027-11-07T04:00:00Z", "2027-11-07T05:30:00Z"},
		{"30 1 * * *", "America/New_York", "2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"},
		{"0 * * * *", "America/New_York", "2027-11-07T05:00:00Z", "2027-11-07T07:00:00Z"}, // 01:00 EDT, then 02:00 EST
		{"*/20 * * * *", "America/New_York", "2027-11-07T05:40:00Z", "2027-11-07T07:00:00Z"},
		// Lord Howe moves by 30 minutes: 01:30-01:59 occurs twice in April.
		{"45 1 * * *", "Australia/Lord_Howe", "2027-04-03T14:00:00Z", "2027-04-03T14:45:00Z"},
		{"45 1 * * *", "Australia/Lord_Howe", "2027-04-03T14:45:00Z", "2027-04-04T15:15:00Z"},
	} {
		sp, err := Parse(c.spec, mustLoad(t, c.zone))
		require.NoError(t, err, c.spec)
		got := nextWithin(t, sp, utc(c.from))
		require.True(t, got.Equal(utc(c.want)), "%q in %s after %s: got %s, want %s", c.spec, c.zone, c.from, got.UTC(), c.want)
	}
}

// fallbackZones are the zones the property and fuzz tests use when the
// machine has no /usr/share/zoneinfo: ones whose changes are unusual
// (midnight skipped, 30- and 45-minute offsets and changes, a two-hour
// change, negative DST, DST suspended for Ramadan, a zone that changed
// its rules in the range) beside common ones.
var fallbackZones = []string{
	"UTC", "America/New_York", "America/Chicago", "America/Los_Angeles", "America/Santiago", "America/Havana",
	"America/Asuncion", "America/Sao_Paulo", "America/St_Johns", "America/Mexico_City", "America/Nuuk",
	"America/Scoresbysund", "Atlantic/Azores", "Europe/London", "Europe/Paris", "Europe/Dublin", "Europe/Chisinau",
	"Europe/Moscow", "Africa/Casablanca", "Africa/Cairo", "Asia/Gaza", "Asia/Beirut", "Asia/Amman", "Asia/Damascus",
	"Asia/Tehran", "Asia/Jerusalem", "Asia/Kathmandu", "Asia/Kolkata", "Australia/Sydney", "Australia/Adelaide",
	"Australia/Lord_Howe", "Pacific/Auckland", "Pacific/Chatham", "Pacific/Apia", "Pacific/Norfolk",
	"Pacific/Kiritimati", "Antarctica/Troll",
}

// zoneNames lists every IANA zone of /usr/share/zoneinfo once (links
// share their data and are tested once), or fallbackZones without it.
func zoneNames(t testing.TB) []string {
	t.Helper()
	const dir = "/usr/share/zoneinfo"
	seen := map[[32]byte]bool{}
	var names []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if name == "posix" || name == "right" { // copies of the others
				return filepath.SkipDir
			}
			return nil
		}
		if name == "localtime" || name == "posixrules" || strings.Contains(name, ".") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(string(b), "TZif") {
			return nil
		}
		if h := sha256.Sum256(b); !seen[h] {
			seen[h] = true
			names = append(names, name)
		}
		return nil
	})
	if len(names) < 100 {
		t.Logf("%s holds %d zones: using the %d fallback zones", dir, len(names), len(fallbackZones))
		return fallbackZones
	}
	return names
}

// civil is a wall time: the date and clock a zone shows, as a UTC time.
func civil(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// matchesWall says whether the wall time w (a civil time) is one the
// pattern names.
func matchesWall(c *cronSpec, w time.Time) bool {
	_, mo, _ := w.Date()
	h, m, sec := w.Clock()
	return sec == 0 && w.Nanosecond() == 0 && c.month&(1<<uint(mo)) != 0 && c.hour&(1<<uint(h)) != 0 &&
		c.min&(1<<uint(m)) != 0 && c.dayMatches(w)
}

// firings returns the minutes of window at which the pattern fires: the
// first showings of the wall times it names, and the first minute after
// a gap that skipped some (once, whatever it shows).
func firings(c *cronSpec, window []minute) []time.Time {
	var at []time.Time
	for _, m := range window {
		fire := !m.repeat && matchesWall(c, m.wall)
		for _, w := range m.skipped {
			fire = fire || matchesWall(c, w)
		}
		if fire {
			at = append(at, m.at)
		}
	}
	return at
}

// offsetsNear returns the offsets loc uses in the two days before n.
func offsetsNear(loc *time.Location, n time.Time) []time.Duration {
	var offs []time.Duration
	for at := n; at.After(n.Add(-48 * time.Hour)); {
		start, _, off := span(at, loc)
		offs = append(offs, off)
		if start.IsZero() {
			break
		}
		at = start.Add(-time.Nanosecond)
	}
	return offs
}

// shownNear reports whether loc's clock shows the wall time w at an
// instant of an offset it used in the two days before n, or at n.
func shownNear(loc *time.Location, w, n time.Time) bool {
	_, o := n.In(loc).Zone()
	for _, off := range append(offsetsNear(loc, n), time.Duration(o)*time.Second) {
		if civil(w.Add(-off).In(loc)).Equal(w) {
			return true
		}
	}
	return false
}

// gapEnd reports whether n ends a gap (the clock jumps forward at n) that
// skipped a wall time the pattern names and loc never
// shows near n.
func gapEnd(c *cronSpec, loc *time.Location, n time.Time) bool {
	_, before := n.Add(-time.Nanosecond).In(loc).Zone()
	for w := civil(n.In(time.FixedZone("", before))); w.Before(civil(n.In(loc))); w = w.Add(time.Minute) {
		if matchesWall(c, w) && !shownNear(loc, w, n) {
			return true
		}
	}
	return false
}

// checkNext checks one result n of Next(from): after from, and either a
// wall time the pattern names at its first occurrence, or the end of a
// gap that skipped one.
func checkNext(t testing.TB, spec string, sp Spec, from, n time.Time) bool {
	t.Helper()
	loc := sp.loc
	switch w := civil(n.In(loc)); {
	case n.IsZero():
		t.Errorf("%q in %s after %s: no next time", spec, loc, from)
	case !n.After(from):
		t.Errorf("%q in %s after %s: next %s is not after it", spec, loc, from, n)
	case matchesWall(sp.cron, w):
		for _, off := range offsetsNear(loc, n) {
			if u := w.Add(-off); u.Before(n) && civil(u.In(loc)).Equal(w) {
				t.Errorf("%q in %s after %s: next %s repeats %s, which fired already", spec, loc, from, n.In(loc), u.In(loc))
				return false
			}
		}
		return true
	case gapEnd(sp.cron, loc, n):
		return true
	default:
		t.Errorf("%q in %s after %s: next %s is no wall time of the pattern, nor the end of a gap that skipped one", spec, loc, from, n.In(loc))
	}
	return false
}

// minute is one UTC minute of a window around a zone change: its wall
// time, whether the window showed that wall time before, and the wall
// times the clock jumped over to reach it that the window never shows.
type minute struct {
	at, wall time.Time
	repeat   bool
	skipped  []time.Time
}

// TestNextEveryZoneAndChange: in every IANA zone, around every change of
// offset from 2020 to 2040, Next moves forward, returns a wall time its
// pattern names at that time's first occurrence or the end of a gap that
// skipped one, and misses none. Around each change, a walk of every
// minute gives the expected firings of frequent patterns (the whole
// sequence) and of daily ones aimed at the wall times the change skips
// or repeats: the first showing of each wall time the pattern names,
// and the first minute after a gap for those the clock jumped over.
func TestNextEveryZoneAndChange(t *testing.T) {
	names := zoneNames(t)
	from, to := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2041, 1, 1, 0, 0, 0, 0, time.UTC)
	// Zones that differ only before 2020 show the same clock from 2020
	// to 2040, and give the same results: each clock is checked once.
	clocks := map[string]bool{}
	zones, changes := 0, 0
	for _, name := range names {
		loc := mustLoad(t, name)
		ch := zoneChanges(loc, from, to)
		_, off := from.In(loc).Zone()
		if sig := signature(off, ch); clocks[sig] {
			continue
		} else {
			clocks[sig] = true
		}
		zones, changes = zones+1, changes+len(ch)
		done := make(chan struct{})
		go func() {
			defer close(done)
			checkZone(t, loc, ch)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the checks did not end within 10s", name)
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d zones, %d distinct clocks, %d changes of offset from 2020 to 2040", len(names), zones, changes)
}

// change is a change of a zone's offset, in seconds, at an instant.
type change struct {
	at            time.Time
	before, after int
}

func zoneChanges(loc *time.Location, from, to time.Time) []change {
	var ch []change
	for at := from; ; {
		_, tr, _ := span(at, loc) // ZoneBounds, past golang/go#81583
		if tr.IsZero() || !tr.Before(to) {
			return ch
		}
		at = tr
		_, before := tr.Add(-time.Nanosecond).In(loc).Zone()
		_, after := tr.In(loc).Zone()
		if before != after { // not a change of name or DST flag only, or a year's end
			ch = append(ch, change{tr, before, after})
		}
	}
}

func checkZone(t *testing.T, loc *time.Location, changes []change) {
	parse := func(spec string) Spec {
		sp, err := Parse(spec, loc)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
		}
		return sp
	}
	dense := []string{"*/15 * * * *", "0 * * * *"}
	denseSpecs := make([]Spec, len(dense))
	for i, s := range dense {
		denseSpecs[i] = parse(s)
	}
	for _, c := range changes {
		tr, offB, offA := c.at, c.before, c.after
		if offB%60 != 0 || offA%60 != 0 || !tr.Equal(tr.Truncate(time.Minute)) {
			t.Errorf("%s at %s: offset or change of seconds %d, %d", loc, tr, offB, offA)
			return
		}
		shift := time.Duration(max(offA-offB, offB-offA)) * time.Second
		// Every minute from an hour before the change to an hour after
		// it, widened by the change: any wall time it repeats was shown
		// first inside the window.
		ws, we := tr.Add(-shift-time.Hour).Truncate(time.Minute), tr.Add(shift+time.Hour)
		window := make([]minute, 0, int(we.Sub(ws)/time.Minute)+1)
		base := ws.Add(-15 * time.Hour) // below every wall time of the window: offsets are above -15h
		seen := make([]bool, cap(window)+30*60)
		for u := ws; u.Before(we); u = u.Add(time.Minute) {
			w := civil(u.In(loc))
			i := int(w.Sub(base) / time.Minute)
			window = append(window, minute{at: u, wall: w, repeat: seen[i]})
			seen[i] = true
		}
		for k := 1; k < len(window); k++ {
			for w := window[k-1].wall.Add(time.Minute); w.Before(window[k].wall); w = w.Add(time.Minute) {
				if !seen[int(w.Sub(base)/time.Minute)] {
					window[k].skipped = append(window[k].skipped, w)
				}
			}
		}
		// The whole sequence of frequent patterns through the window.
		for i, sp := range denseSpecs {
			want := firings(sp.cron, window)
			var got []time.Time
			for n := ws.Add(-time.Nanosecond); ; {
				p := n
				n = sp.Next(n)
				if !checkNext(t, dense[i], sp, p, n) || !n.Before(we) {
					break
				}
				got = append(got, n)
			}
			if !equalTimes(got, want) {
				t.Errorf("%q in %s around %s: got %v, want %v", dense[i], loc, tr, got, want)
			}
		}
		// Daily patterns at the wall times next to the change (the
		// first one it skips or repeats, the first after it), midnight,
		// and a weekly one, from before, at and after the change.
		wb, wa := civil(tr.In(time.FixedZone("", offB))), civil(tr.In(loc))
		specs := []string{"0 0 * * *", "0 9 * * 1", minuteSpec(wb), minuteSpec(wa), minuteSpec(wa.Add(-time.Minute))}
		for _, spec := range specs {
			sp := parse(spec)
			fire := firings(sp.cron, window)
			for _, f := range []time.Time{tr.Add(-25 * time.Hour), tr.Add(-shift - time.Minute), tr.Add(-time.Nanosecond), tr, tr.Add(shift)} {
				n := sp.Next(f)
				if !checkNext(t, spec, sp, f, n) {
					continue
				}
				for _, at := range fire {
					if at.After(f) && at.Before(n) {
						t.Errorf("%q in %s after %s: next %s misses %s", spec, loc, f, n.In(loc), at.In(loc))
						break
					}
				}
			}
		}
		if t.Failed() {
			return
		}
	}
}

func minuteSpec(w time.Time) string {
	return time.Date(2000, 1, 1, w.Hour(), w.Minute(), 0, 0, time.UTC).Format("4 15") + " * * *"
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// FuzzNextInZone: for any spec that parses, in any of fallbackZones, from
// any time between 1970 and 2100, Next ends (within 10 s), and three
// firings in a row each move forward, within eight years, to a wall time
// the pattern names at its first occurrence, or to the end of a gap that
// skipped one (every match fires, so there is always a next one).
func FuzzNextInZone(f *testing.F) {
	for _, s := range []string{"0 5 * * *", "@daily", "0 9 * * 1", "*/7 0-3 * 3,9-11 *", "30 2 14 3 *", "0 0 29 2 *", "@every 1h"} {
		f.Add(s, uint16(1), time.Date(2027, 3, 13, 12, 0, 0, 0, time.UTC).Unix())  // New York, the day before its gap
		f.Add(s, uint16(4), time.Date(2027, 9, 2, 12, 0, 0, 0, time.UTC).Unix())   // Santiago, before its midnight gap
		f.Add(s, uint16(14), time.Date(2027, 3, 27, 12, 0, 0, 0, time.UTC).Unix()) // Paris, the day before its gap
	}
	locs := make([]*time.Location, len(fallbackZones))
	for i, name := range fallbackZones {
		locs[i] = mustLoad(f, name)
	}
	const span = 130 * 365 * 24 * 3600
	f.Fuzz(func(t *testing.T, s string, zone uint16, sec int64) {
		loc := locs[int(zone)%len(locs)]
		sp, err := Parse(s, loc)
		if err != nil {
			return
		}
		from := time.Unix(sec%span, 0).Add(time.Duration(sec%1000) * time.Millisecond)
		if from.Before(time.Unix(0, 0)) {
			from = from.Add(span * time.Second)
		}
		for range 3 {
			n := nextWithin(t, sp, from)
			require.False(t, n.After(from.Add(searchSpan)), "%q after %s: %s is beyond the bound", s, from, n)
			if sp.cron == nil {
				require.True(t, n.After(from), "%q after %s: %s", s, from, n)
			} else if !checkNext(t, s, sp, from, n) {
				return
			}
			from = n
		}
	})
}

// signature names the clock an offset and its changes make.
func signature(off int, changes []change) string {
	var b strings.Builder
	fmt.Fprint(&b, off)
	for _, c := range changes {
		fmt.Fprintf(&b, " %d:%d", c.at.Unix(), c.after)
	}
	return b.String()
}

// BenchmarkNextLongest: the longest searches, in a zone that changes
// twice a year: eight years for a 29 February across 2100, and most of
// a year, day by day, for a last minute of the year. They bound the cost
// the package doc states.
func BenchmarkNextLongest(b *testing.B) {
	loc := mustLoad(b, "America/Santiago")
	for _, c := range []struct {
		spec string
		from time.Time
	}{
		{"0 0 29 2 *", time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"59 23 31 12 *", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		sp, err := Parse(c.spec, loc)
		require.NoError(b, err)
		b.Run(c.spec, func(b *testing.B) {
			for b.Loop() {
				if sp.Next(c.from).IsZero() {
					b.Fatal("no next")
				}
			}
		})
	}
}
