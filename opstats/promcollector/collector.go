package promcollector

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/natscoord/natscoord/opstats"
)

// Collector is a prometheus.Collector over opstats families read at
// scrape time. It holds no state of its own and is safe for concurrent
// use as far as its sources are (a Recorder's Families and a worker's
// Stats are).
type Collector struct {
	sources []func() []opstats.Family
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a Collector of the families its sources return, read at
// every scrape: a Recorder's Families, a worker's Stats().Families, or
// any func giving opstats families. A nil source is skipped.
func New(sources ...func() []opstats.Family) *Collector {
	c := &Collector{}
	for _, s := range sources {
		if s != nil {
			c.sources = append(c.sources, s)
		}
	}
	return c
}

// Describe sends nothing: the Collector is unchecked (see the package
// doc).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads every source and sends its families as const metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, src := range c.sources {
		for _, f := range src() {
			collectFamily(ch, f)
		}
	}
}

// collectFamily sends f's samples: one metric per counter or gauge
// sample, one histogram per label set of a histogram's
// _bucket/_sum/_count samples.
func collectFamily(ch chan<- prometheus.Metric, f opstats.Family) {
	if f.Kind == opstats.Histogram {
		collectHistogram(ch, f)
		return
	}
	vt := prometheus.UntypedValue
	switch f.Kind {
	case opstats.Counter:
		vt = prometheus.CounterValue
	case opstats.Gauge:
		vt = prometheus.GaugeValue
	}
	descs := map[string]*prometheus.Desc{} // by name and label names
	for _, s := range f.Samples {
		names, values := split(s.Labels)
		name := f.Name + s.Suffix
		k := name + "\x00" + strings.Join(names, "\x00")
		d := descs[k]
		if d == nil {
			d = prometheus.NewDesc(name, f.Help, names, nil)
			descs[k] = d
		}
		send(ch, d, func() (prometheus.Metric, error) { return prometheus.NewConstMetric(d, vt, s.Value, values...) })
	}
}

// histogram gathers one label set's parts of a histogram family.
type histogram struct {
	names, values []string
	buckets       map[float64]uint64
	sum           float64
	count         uint64
	err           error
}

func collectHistogram(ch chan<- prometheus.Metric, f opstats.Family) {
	var order []*histogram
	byLabels := map[string]*histogram{}
	for _, s := range f.Samples {
		var le string
		rest := s.Labels
		if s.Suffix == "_bucket" {
			rest = make([]opstats.Label, 0, len(s.Labels))
			for _, l := range s.Labels {
				if l.Name == "le" {
					le = l.Value
					continue
				}
				rest = append(rest, l)
			}
		}
		names, values := split(rest)
		k := strings.Join(names, "\x00") + "\x01" + strings.Join(values, "\x00")
		h := byLabels[k]
		if h == nil {
			h = &histogram{names: names, values: values, buckets: map[float64]uint64{}}
			byLabels[k] = h
			order = append(order, h)
		}
		switch s.Suffix {
		case "_bucket":
			if le == "+Inf" {
				continue // the count, given by _count
			}
			b, err := strconv.ParseFloat(le, 64)
			if err != nil && h.err == nil {
				h.err = fmt.Errorf("promcollector: %s: bucket bound %q: %w", f.Name, le, err)
			}
			h.buckets[b] = uint64(s.Value)
		case "_sum":
			h.sum = s.Value
		case "_count":
			h.count = uint64(s.Value)
		default:
			if h.err == nil {
				h.err = fmt.Errorf("promcollector: %s: histogram sample with suffix %q", f.Name, s.Suffix)
			}
		}
	}
	descs := map[string]*prometheus.Desc{}
	for _, h := range order {
		k := strings.Join(h.names, "\x00")
		d := descs[k]
		if d == nil {
			d = prometheus.NewDesc(f.Name, f.Help, h.names, nil)
			descs[k] = d
		}
		send(ch, d, func() (prometheus.Metric, error) {
			if h.err != nil {
				return nil, h.err
			}
			return prometheus.NewConstHistogram(d, h.count, h.sum, h.buckets, h.values...)
		})
	}
}

// send sends the metric build returns, or an invalid metric carrying its
// error, which the registry's Gather reports.
func send(ch chan<- prometheus.Metric, d *prometheus.Desc, build func() (prometheus.Metric, error)) {
	m, err := build()
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

// split returns the names and values of ls, in their order.
func split(ls []opstats.Label) (names, values []string) {
	names = make([]string, len(ls))
	values = make([]string, len(ls))
	for i, l := range ls {
		names[i], values[i] = l.Name, l.Value
	}
	return names, values
}
