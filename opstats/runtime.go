package opstats

import (
	"runtime"
	"runtime/metrics"
)

// runtimeSamples are the runtime/metrics read by RuntimeFamilies (none of
// them stops the world, as runtime.ReadMemStats would).
var runtimeSamples = []struct{ metric, name, help string }{
	{"/memory/classes/heap/objects:bytes", "go_memstats_heap_alloc_bytes", "Bytes of allocated heap objects."},
	{"/memory/classes/total:bytes", "go_memstats_sys_bytes", "Bytes of memory obtained from the OS."},
	{"/gc/cycles/total:gc-cycles", "go_gc_cycles_total", "Completed GC cycles."},
}

// RuntimeFamilies returns the process's goroutines, heap, memory and GC
// cycles under the names Prometheus' Go client uses (go_goroutines,
// go_memstats_heap_alloc_bytes, go_memstats_sys_bytes,
// go_gc_cycles_total) and go_info with the Go version.
func RuntimeFamilies() []Family {
	ss := make([]metrics.Sample, len(runtimeSamples))
	for i, r := range runtimeSamples {
		ss[i].Name = r.metric
	}
	metrics.Read(ss)
	out := []Family{
		{Name: "go_goroutines", Help: "Goroutines that currently exist.", Kind: Gauge,
			Samples: []Sample{{Value: float64(runtime.NumGoroutine())}}},
		{Name: "go_info", Help: "Information about the Go environment.", Kind: Gauge,
			Samples: []Sample{{Labels: []Label{{"version", runtime.Version()}}, Value: 1}}},
	}
	for i, r := range runtimeSamples {
		if ss[i].Value.Kind() != metrics.KindUint64 {
			continue // not known to this Go version
		}
		kind := Gauge
		if r.name == "go_gc_cycles_total" {
			kind = Counter
		}
		out = append(out, Family{Name: r.name, Help: r.help, Kind: kind, Samples: []Sample{{Value: float64(ss[i].Value.Uint64())}}})
	}
	return out
}
