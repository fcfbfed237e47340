package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// A backlog sample keeps sampleKinds kinds by name, the largest, and sums
// the rest: memory is bounded whatever the number of kinds.
func TestBacklogSampleIsBounded(t *testing.T) {
	byKind := make(map[string]int)
	for i := range 40 {
		byKind[fmt.Sprintf("k%02d", i)] = i + 1
	}
	s := sampleOf(time.Unix(600, 0), byKind)
	require.Len(t, s.kinds, sampleKinds)
	require.Equal(t, kindCount{"k39", 40}, s.kinds[0])
	other := 0
	for i := range 40 - sampleKinds {
		other += i + 1
	}
	require.Equal(t, other, s.other)
}

// Finishes are counted by the second of their time within the hour
// before now: older ones are dropped, a writer's clock ahead of ours
// counts now, and a slot reused an hour later starts again from zero.
func TestFinishesWindow(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)
	var f finishes
	f.add(now.Add(-time.Hour), now, false)      // just outside
	f.add(now.Add(-59*time.Minute), now, true)  // inside
	f.add(now.Add(10*time.Second), now, false)  // ahead: now
	f.add(now.Add(-20*time.Second), now, false) // this minute
	require.Equal(t, 3, f.count(now, chartWindow))
	require.Equal(t, 2, f.count(now, time.Minute))
	cols := f.perMinute(chartFirst(now), now)
	require.Equal(t, finishMinute{Completed: 2}, cols[chartMinutes-1])
	require.Equal(t, finishMinute{Failed: 1}, cols[0])
	later := now.Add(time.Hour)
	f.add(later, later, false) // the slot of now, an hour on
	require.Equal(t, 1, f.count(later, chartWindow))
	require.Equal(t, []int{1, 2, 5, 10, 20, 50}, []int{niceCeil(0), niceCeil(2), niceCeil(3), niceCeil(7), niceCeil(11), niceCeil(50)})
}

// storedBefore finds the first write on the subject at or after a
// sequence, skipping other subjects, and says whether it is older than a
// time; with none it says no, so the feed starts by time.
func TestStoredBefore(t *testing.T) {
	n := natstest.WithServer(t)
	js := n.NewJS(t)
	ctx := natstest.Context(t, 10*time.Second)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"t.>", "o.>"}})
	require.NoError(t, err)
	for _, subj := range []string{"o.1", "t.1", "o.2"} {
		_, err := js.Publish(ctx, subj, nil)
		require.NoError(t, err)
	}
	now := time.Now()
	before, err := storedBefore(ctx, st, "t.>", 1, now.Add(time.Hour))
	require.NoError(t, err)
	require.True(t, before, "t.1, at sequence 2, is older than an hour ahead")
	before, err = storedBefore(ctx, st, "t.>", 1, now.Add(-time.Hour))
	require.NoError(t, err)
	require.False(t, before)
	before, err = storedBefore(ctx, st, "t.>", 3, now.Add(time.Hour))
	require.NoError(t, err)
	require.False(t, before, "no t. write from sequence 3 on")
}
