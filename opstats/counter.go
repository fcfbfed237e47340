package opstats

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// CounterVec counts things by label values, for counts that have no
// duration (events seen, actions taken): one counter family. The zero
// value is not usable; use NewCounterVec. Safe for concurrent use.
type CounterVec struct {
	name, help string
	labels     []string
	mu         sync.Mutex
	counts     map[string]*count // by key(values)
}

type count struct {
	values []string
	n      uint64
}

// NewCounterVec returns a counter family named name with the given label
// names (none: a single counter).
func NewCounterVec(name, help string, labels ...string) *CounterVec {
	return &CounterVec{name: name, help: help, labels: append([]string(nil), labels...), counts: make(map[string]*count)}
}

// values returns values fitted to the label names, and its map key (each
// value quoted, so no value can pass for two).
func (c *CounterVec) values(values []string) ([]string, string) {
	vs := make([]string, len(c.labels))
	copy(vs, values)
	var k strings.Builder
	for _, v := range vs {
		k.WriteString(strconv.Quote(v))
	}
	return vs, k.String()
}

// Add adds n to the counter of values, one per label name: missing
// values are empty, extra ones are dropped.
func (c *CounterVec) Add(n uint64, values ...string) {
	vs, k := c.values(values)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.counts[k]
	if e == nil {
		e = &count{values: vs}
		c.counts[k] = e
	}
	e.n += n
}

// Inc adds one to the counter of values (see Add).
func (c *CounterVec) Inc(values ...string) { c.Add(1, values...) }

// Get returns the counter of values (see Add).
func (c *CounterVec) Get(values ...string) uint64 {
	_, k := c.values(values)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.counts[k]; e != nil {
		return e.n
	}
	return 0
}

// Family returns the counters as a family, sorted by label values. A
// CounterVec without labels always has its one sample (0 before any Add),
// so a scraper sees the series from the start.
func (c *CounterVec) Family() Family {
	c.mu.Lock()
	all := make([]count, 0, len(c.counts))
	for _, e := range c.counts {
		all = append(all, *e)
	}
	c.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return slices.Compare(all[i].values, all[j].values) < 0 })
	f := Family{Name: c.name, Help: c.help, Kind: Counter}
	if len(c.labels) == 0 {
		var n uint64
		if len(all) == 1 {
			n = all[0].n
		}
		f.Samples = []Sample{{Value: float64(n)}}
		return f
	}
	for _, e := range all {
		ls := make([]Label, len(c.labels))
		for j, name := range c.labels {
			ls[j] = Label{name, e.values[j]}
		}
		f.Samples = append(f.Samples, Sample{Labels: ls, Value: float64(e.n)})
	}
	return f
}
