package opstats

import (
	"io"
	"math"
	"strconv"
	"strings"
)

// Kind is a metric family's type in the Prometheus text format.
type Kind string

// The kinds WriteText writes.
const (
	Counter   Kind = "counter"
	Gauge     Kind = "gauge"
	Histogram Kind = "histogram"
)

// Family is one metric family: a name, its help text and kind, and its
// samples. A Recorder's series, a CounterVec and values read at scrape
// time (gauges) all become Families, and WriteText is the one writer of
// the text format in natscoord.
type Family struct {
	Name, Help string
	Kind       Kind
	Samples    []Sample
}

// Sample is one value of a family. Suffix is appended to the family's
// name ("_bucket", "_sum", "_count" for a histogram's parts); Labels are
// written in their order.
type Sample struct {
	Suffix string
	Labels []Label
	Value  float64
}

// Label is one name="value" pair of a sample.
type Label struct{ Name, Value string }

// WriteText writes fams in the Prometheus text exposition format (version
// 0.0.4, the Content-Type TextContentType), each with its HELP and TYPE
// lines, label values escaped as the format requires.
func WriteText(w io.Writer, fams ...Family) error {
	var b strings.Builder
	for _, f := range fams {
		b.WriteString("# HELP ")
		b.WriteString(f.Name)
		b.WriteByte(' ')
		b.WriteString(helpEscaper.Replace(f.Help))
		b.WriteString("\n# TYPE ")
		b.WriteString(f.Name)
		b.WriteByte(' ')
		b.WriteString(string(f.Kind))
		b.WriteByte('\n')
		for _, s := range f.Samples {
			b.WriteString(f.Name)
			b.WriteString(s.Suffix)
			if len(s.Labels) > 0 {
				b.WriteByte('{')
				for i, l := range s.Labels {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(l.Name)
					b.WriteString(`="`)
					b.WriteString(labelEscaper.Replace(l.Value))
					b.WriteByte('"')
				}
				b.WriteByte('}')
			}
			b.WriteByte(' ')
			b.WriteString(formatValue(s.Value))
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// TextContentType is the Content-Type of WriteText's output.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// formatValue writes whole numbers as integers (counts stay exact up to
// 2^53), others in the shortest form that reads back the same.
func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	case v == math.Trunc(v) && math.Abs(v) < 1<<53:
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
