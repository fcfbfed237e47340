// Package promcollector registers natscoord's metrics in a
// prometheus/client_golang registry, for a service that already serves
// its own /metrics with that library:
//
//	rec := opstats.New()
//	locker, _ := kvlock.New(ctx, js, kvlock.Config{Observer: kvlock.RecorderObserver(rec)})
//	prometheus.MustRegister(promcollector.New(rec.Families))
//
// and with a worker, the series `natscoord work --metrics-listen` serves
// (the worker's RecorderObserver and its Stats):
//
//	w, _ := worker.New(ctx, js, led, worker.Config{Observer: worker.RecorderObserver(rec)})
//	prometheus.MustRegister(promcollector.New(rec.Families,
//		func() []opstats.Family { return w.Stats().Families() }))
//
// A Collector reads its sources at every scrape and turns each
// opstats.Family into const metrics: the same names, help, label names
// and values and types (counter, gauge, histogram) as opstats.WriteText
// writes for them, so a series has one name whichever way it is served.
// opstats stays the one producer and WriteText the one writer of the text
// format; this package only converts.
//
// Do not pass opstats.RuntimeFamilies: client_golang's own Go collector
// (in prometheus.DefaultRegisterer, or collectors.NewGoCollector) serves
// the go_* series under the same names, and a registry refuses a series
// gathered twice.
//
// The Collector is unchecked (its Describe sends nothing): which series a
// Recorder holds is known only once operations ran. A source's family
// that clashes with another collector's is reported by the registry's
// Gather; a sample client_golang refuses (a label value that is not
// UTF-8) is reported by Gather as that family's error, and the other
// series are still gathered.
//
// It is a module of its own so that programs importing natscoord without
// client_golang never pull it (as kvlock/otelobserver is for
// OpenTelemetry).
package promcollector
