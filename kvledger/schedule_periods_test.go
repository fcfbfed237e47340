package kvledger_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// The zero SchedulePeriods has no period: Next and Latest are the zero
// time (Latest returned from before). A parsed one's Latest is the last
// period start in [from, now], and the zero time when none starts in it.
func TestSchedulePeriodsZeroAndLatest(t *testing.T) {
	from := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	now := from.Add(150 * time.Second)
	var zero kvledger.SchedulePeriods
	require.True(t, zero.Next(from).IsZero())
	require.True(t, zero.Latest(from, now).IsZero())

	for _, spec := range []string{"@every 1m", "* * * * *"} {
		p, err := kvledger.Schedule{Name: "s", Spec: spec}.Periods()
		require.NoError(t, err, spec)
		require.True(t, p.Next(from).Equal(from.Add(time.Minute)), spec)
		require.True(t, p.Latest(from, now).Equal(from.Add(2*time.Minute)), spec)
		require.True(t, p.Latest(from, from.Add(time.Second)).Equal(from), "%s: from itself when no later one started", spec)
		require.True(t, p.Latest(now, from).IsZero(), "%s: from after now", spec)

		// A from that is no period start: the start after it, once it
		// has come, and never a start before from (an @every spec
		// returned now rounded down, 06:00 here, before from).
		mid := from.Add(30 * time.Second)
		require.True(t, p.Latest(mid, mid.Add(20*time.Second)).IsZero(), "%s: no start in [from, now]", spec)
		require.True(t, p.Latest(mid, now).Equal(from.Add(2*time.Minute)), spec)
		require.True(t, p.Latest(mid, from.Add(time.Minute)).Equal(from.Add(time.Minute)), "%s: now on a start", spec)
	}
}

// A stored schedule's next period across a change of offset, through
// the Schedule and SchedulePeriods a reader (`ledger schedule ls`, the
// dashboard, the worker) uses: these examples spun forever (issue 34
// item 1). A wall time the change skips fires when the gap ends, so a
// daily job still runs that day; one it repeats fires once.
func TestScheduleNextAcrossDSTChanges(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	for _, c := range []struct{ spec, zone, from, want string }{
		{"0 5 * * *", "America/New_York", "2027-03-13T12:00:00Z", "2027-03-14T09:00:00Z"},
		{"0 5 * * *", "America/New_York", "2027-03-14T05:00:00Z", "2027-03-14T09:00:00Z"},
		{"@daily", "America/New_York", "2027-03-13T12:00:00Z", "2027-03-14T05:00:00Z"},
		{"@daily", "America/New_York", "2027-03-14T05:00:00Z", "2027-03-15T04:00:00Z"},
		{"0 9 * * 1", "America/Santiago", "2027-09-02T12:00:00Z", "2027-09-06T12:00:00Z"},
		{"30 2 * * *", "America/New_York", "2027-03-13T12:00:00Z", "2027-03-14T07:00:00Z"}, // 02:30 skipped on the 14th: 03:00 EDT
		{"30 2 * * *", "America/New_York", "2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z"},
		{"30 2 * * *", "Europe/Paris", "2027-03-27T12:00:00Z", "2027-03-28T01:00:00Z"},     // the README's example: 03:00 CEST
		{"@daily", "America/Santiago", "2027-09-04T12:00:00Z", "2027-09-05T04:00:00Z"},     // no midnight on the 5th: 01:00 -03
		{"30 1 * * *", "America/New_York", "2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"}, // 01:30 EST repeats 01:30 EDT
	} {
		sc := kvledger.Schedule{Name: "s", Spec: c.spec, TimeZone: c.zone, Task: kvledger.ScheduleTask{Kind: "k"}}
		require.NoError(t, sc.Validate())
		p, err := sc.Periods()
		require.NoError(t, err)
		got := make(chan [2]time.Time, 1)
		go func() { got <- [2]time.Time{sc.Next(utc(c.from)), p.Next(utc(c.from))} }()
		select {
		case g := <-got:
			for _, n := range g {
				require.True(t, n.Equal(utc(c.want)), "%q in %s after %s: got %s, want %s", c.spec, c.zone, c.from, n.UTC(), c.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q in %s after %s: Next did not return within 10s", c.spec, c.zone, c.from)
		}
		// Latest walks the periods with Next: the one that started by
		// the change's next day.
		require.True(t, p.Latest(utc(c.want), utc(c.want).Add(time.Hour)).Equal(utc(c.want)))
	}
}
