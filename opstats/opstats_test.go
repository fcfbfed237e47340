package opstats_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/opstats"
)

func TestRecorderSnapshotAndPrometheus(t *testing.T) {
	r := opstats.New(time.Millisecond, 10*time.Millisecond)
	l := opstats.Labels{Component: "kvlock", Name: "lock", Op: "acquire", Outcome: "ok"}
	r.Record(l, 500*time.Microsecond)
	r.Record(l, 5*time.Millisecond)
	r.Record(l, time.Second)
	r.Record(opstats.Labels{Component: "kvlock", Name: `we"ird`, Op: "lost", Outcome: "lost"}, 0)
	require.EqualValues(t, 3, r.Count(l))
	snap := r.Snapshot()
	require.Len(t, snap, 2)
	s := snap[0]
	require.Equal(t, l, s.Labels)
	require.Equal(t, []uint64{1, 2}, s.Buckets, "cumulative")
	require.Equal(t, time.Second, s.Max)
	require.Equal(t, (time.Second+5500*time.Microsecond)/3, s.Mean())

	var b strings.Builder
	require.NoError(t, r.WritePrometheus(&b))
	out := b.String()
	require.Contains(t, out, `natscoord_operations_total{component="kvlock",name="lock",op="acquire",outcome="ok"} 3`)
	require.Contains(t, out, `natscoord_operation_duration_seconds_bucket{component="kvlock",name="lock",op="acquire",outcome="ok",le="0.001"} 1`)
	require.Contains(t, out, `le="+Inf"} 3`)
	require.Contains(t, out, `name="we\"ird"`)
}

func TestJoinAndEach(t *testing.T) {
	var got []string
	h := opstats.Each(func(_ context.Context, e string) { got = append(got, e) })
	require.Nil(t, opstats.Join[string](nil, nil))
	_, wrapped := opstats.Join(nil, h).(opstats.Fanout[string])
	require.False(t, wrapped, "one hook is returned as is")
	f := opstats.Join(h, nil, h)
	ctx := context.Background()
	f.OnAcquire(ctx, "a")
	f.OnRenew(ctx, "r")
	f.OnRelease(ctx, "x")
	f.OnLost(ctx, "l")
	require.Equal(t, []string{"a", "a", "r", "r", "x", "x", "l", "l"}, got)
}
