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
