package cronspec

import (
	"strings"
	"testing"
	"time"
)

func TestParseSpecNext(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		spec, from, want string
	}{
		{"@every 1m", "2026-12-01T10:00:30Z", "2026-12-01T10:01:00Z"},
		{"@every 90s", "2026-12-01T10:00:00Z", "2026-12-01T10:01:30Z"},
		{"@hourly", "2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z"},
		{"@daily", "2026-12-01T10:00:00Z", "2026-12-02T00:00:00Z"},
		{"*/15 * * * *", "2026-12-01T10:07:00Z", "2026-12-01T10:15:00Z"},
		{"0 9-17/4 * * *", "2026-12-01T10:00:00Z", "2026-12-01T13:00:00Z"},
		{"30 2 1 * *", "2026-12-01T10:00:00Z", "2027-01-01T02:30:00Z"},
		{"0 0 * * 0", "2026-12-01T10:00:00Z", "2026-12-06T00:00:00Z"}, // next Sunday
		{"0 0 * * 7", "2026-12-01T10:00:00Z", "2026-12-06T00:00:00Z"},
		{"0 0 13 * 5", "2026-12-01T10:00:00Z", "2026-12-04T00:00:00Z"}, // a Friday or the 13th
		{"0 0 29 2 *", "2026-12-01T10:00:00Z", "2028-02-29T00:00:00Z"},
	}
	for _, c := range cases {
		s, err := Parse(c.spec, nil)
		if err != nil {
			t.Fatalf("%q: %v", c.spec, err)
		}
		if got := s.Next(at(c.from)); !got.Equal(at(c.want)) {
			t.Errorf("%q after %s: got %s, want %s", c.spec, c.from, got, c.want)
		}
	}
	for _, bad := range []string{"", "* * *", "60 * * * *", "* 24 * * *", "*/0 * * * *", "5-1 * * * *", "@every 10ms", "@every x", "@sometimes",
		"0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"} {
		if _, err := Parse(bad, nil); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Latest finds the last period start in a stretch of missed periods, and
// the zero time when no period starts in [from, now].
func TestSpecLatest(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct{ spec, from, now, want string }{
		{"@every 1m", "2026-12-01T10:00:00Z", "2026-12-01T10:05:30Z", "2026-12-01T10:05:00Z"},
		{"@every 1m", "2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z"},
		{"*/15 * * * *", "2026-12-01T10:15:00Z", "2026-12-01T11:20:00Z", "2026-12-01T11:15:00Z"},
		{"0 0 * * *", "2026-12-01T00:00:00Z", "2026-12-01T23:59:00Z", "2026-12-01T00:00:00Z"},
		// A from that is no period start: never a start before it.
		{"@every 1m", "2026-12-01T10:00:30Z", "2026-12-01T10:00:50Z", ""},
		{"@every 1m", "2026-12-01T10:00:30Z", "2026-12-01T10:02:10Z", "2026-12-01T10:02:00Z"},
		{"*/15 * * * *", "2026-12-01T10:05:00Z", "2026-12-01T10:14:00Z", ""},
		{"*/15 * * * *", "2026-12-01T10:05:00Z", "2026-12-01T10:15:00Z", "2026-12-01T10:15:00Z"},
		{"@every 1m", "2026-12-01T10:01:00Z", "2026-12-01T10:00:00Z", ""},
	} {
		s, err := Parse(c.spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := time.Time{}
		if c.want != "" {
			want = at(c.want)
		}
		if got := s.Latest(at(c.from), at(c.now)); !got.Equal(want) {
			t.Errorf("%q from %s to %s: got %s, want %s", c.spec, c.from, c.now, got, c.want)
		}
	}
}

// FuzzParseSpec: any input is refused with an error or gives a schedule
// whose next firing is after its argument; nothing panics.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"@every 1s", "*/5 1,2 3-9 * 1-5", "0 0 31 2 *", "@weekly", "7 7 7 7 7"} {
		f.Add(s)
	}
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := Parse(s, nil)
		if err != nil {
			return
		}
		if n := sp.Next(from); !n.IsZero() && !n.After(from) {
			t.Fatalf("%q: next %s not after %s", s, n, from)
		}
	})
}

// TestParseSpecHugeStep: a step beyond the field's range is refused
// with an error that says so; one near the int range used to wrap the
// loop around and read "30/9223372036854775807" as minutes 30, 28, 26...
// (issue 25 item 13). A step the size of the range names the start only.
func TestParseSpecHugeStep(t *testing.T) {
	for _, s := range []string{"30/9223372036854775807 * * * *", "*/61 * * * *", "0 */25 * * *", "0 0 1/9223372036854775806 * *"} {
		_, err := Parse(s, nil)
		if err == nil || !strings.Contains(err.Error(), "larger than the field's range") {
			t.Errorf("%q: got %v, want a step error", s, err)
		}
	}
	sp, err := Parse("30/60 * * * *", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sp.cron.min != 1<<30 {
		t.Errorf("30/60: minutes %b, want only 30", sp.cron.min)
	}
	sp, err = Parse("58/1 * * * *", nil)
	if err != nil || sp.cron.min != 1<<58|1<<59 {
		t.Errorf("58/1: %b %v", sp.cron.min, err)
	}
}
