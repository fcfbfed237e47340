package opstats_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/opstats"
)

func TestWriteTextEscapesAndFormats(t *testing.T) {
	var b strings.Builder
	require.NoError(t, opstats.WriteText(&b,
		opstats.Family{Name: "a_total", Help: "line one\nback\\slash", Kind: opstats.Counter, Samples: []opstats.Sample{
			{Labels: []opstats.Label{{Name: "v", Value: "q\"uote\\back\nnl"}}, Value: 1 << 52},
			{Value: 0.25},
		}},
		opstats.Family{Name: "g", Help: "gauge", Kind: opstats.Gauge, Samples: []opstats.Sample{
			{Suffix: "_x", Value: math.Inf(1)}, {Value: 1e300}}},
	))
	require.Equal(t, "# HELP a_total line one\\nback\\\\slash\n# TYPE a_total counter\n"+
		"a_total{v=\"q\\\"uote\\\\back\\nnl\"} 4503599627370496\n"+
		"a_total 0.25\n"+
		"# HELP g gauge\n# TYPE g gauge\ng_x +Inf\ng 1e+300\n", b.String())
}

// Values are kept apart however they are spelled; a wrong number of
// values is fitted (missing ones empty, extra dropped), never a panic.
func TestCounterVec(t *testing.T) {
	c := opstats.NewCounterVec("c_total", "help", "a", "b")
	c.Inc("x\x00", "y")
	c.Inc("x", "\x00y")
	c.Add(2, "x")
	c.Inc("x", "", "extra")
	require.EqualValues(t, 1, c.Get("x\x00", "y"))
	require.EqualValues(t, 3, c.Get("x"))
	f := c.Family()
	require.Equal(t, opstats.Counter, f.Kind)
	require.Len(t, f.Samples, 3)
	require.Equal(t, []opstats.Label{{Name: "a", Value: "x"}, {Name: "b", Value: ""}}, f.Samples[0].Labels, "sorted by values")
	require.EqualValues(t, 3, f.Samples[0].Value)

	one := opstats.NewCounterVec("one_total", "help")
	require.Equal(t, []opstats.Sample{{Value: 0}}, one.Family().Samples, "a counter without labels is served from the start")
	one.Inc()
	one.Inc("ignored")
	require.Equal(t, []opstats.Sample{{Value: 2}}, one.Family().Samples)
}

func TestRuntimeFamilies(t *testing.T) {
	names := map[string]bool{}
	for _, f := range opstats.RuntimeFamilies() {
		names[f.Name] = true
		require.NotEmpty(t, f.Samples, f.Name)
	}
	for _, n := range []string{"go_goroutines", "go_info", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes", "go_gc_cycles_total"} {
		require.True(t, names[n], n)
	}
}
