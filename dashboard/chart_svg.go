package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// barChart is a stacked bar chart of one value per series per minute,
// drawn as inline SVG on the server (no script draws it). Each column
// carries its minute and numbers as data attributes and a title (shown on
// hover); the page gives the same numbers as a table.
type barChart struct {
	ID, Title string
	Desc      string // the summary a screen reader reads
	Series    []chartSeries
	Cols      []chartCol
}

type chartSeries struct {
	Name  string
	Class string // the fill's CSS class
}

type chartCol struct {
	T      time.Time // the minute's start
	Values []int     // one per series
	None   bool      // no data for this minute (the dashboard was not running)
}

// Drawing sizes of a bar chart, in the SVG's own units: it is scaled to
// its box's width (svg.chart is 100% wide), so it never widens a page.
const (
	chartW, chartH        = 640, 190
	chartLeft, chartRight = 36, 8
	chartTop, chartBottom = 10, 24
)

func (c barChart) total(i int) int {
	n := 0
	for _, v := range c.Cols[i].Values {
		n += v
	}
	return n
}

// svg draws the chart. Every text is XML-escaped.
func (c barChart) svg() string {
	top := 0
	for i := range c.Cols {
		top = max(top, c.total(i))
	}
	ymax := niceCeil(top)
	plotW, plotH := float64(chartW-chartLeft-chartRight), float64(chartH-chartTop-chartBottom)
	colW := plotW / float64(max(1, len(c.Cols)))
	y := func(v int) float64 { return float64(chartTop) + plotH - plotH*float64(v)/float64(ymax) }
	var b strings.Builder
	b.Grow(256 * (len(c.Cols) + 1) * (len(c.Series) + 1)) // about what a full chart takes
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="%s" viewBox="0 0 %d %d" preserveAspectRatio="xMidYMid meet" role="img" aria-labelledby="%s-title %s-desc">`,
		esc(c.ID), chartW, chartH, esc(c.ID), esc(c.ID))
	fmt.Fprintf(&b, `<title id="%s-title">%s</title><desc id="%s-desc">%s</desc>`, esc(c.ID), esc(c.Title), esc(c.ID), esc(c.Desc))
	for _, v := range []int{0, ymax / 2, ymax} {
		if v == ymax/2 && (ymax < 2 || ymax%2 != 0) {
			continue
		}
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/><text class="axis" x="%d" y="%.1f" text-anchor="end">%d</text>`,
			chartLeft, chartW-chartRight, y(v), y(v), chartLeft-4, y(v)+4, v)
	}
	for i, col := range c.Cols {
		x := float64(chartLeft) + float64(i)*colW
		fmt.Fprintf(&b, `<g class="col" data-t="%s" data-n="%s"><title>%s</title>`,
			col.T.UTC().Format(time.RFC3339), c.numbers(col), esc(c.colTitle(col)))
		fmt.Fprintf(&b, `<rect class="hit" x="%.1f" y="%d" width="%.1f" height="%.0f"/>`, x, chartTop, colW, plotH)
		base := 0
		for s, v := range col.Values {
			if v == 0 {
				continue
			}
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`,
				c.Series[s].Class, x+0.75, y(base+v), max(colW-1.5, 1), y(base)-y(base+v))
			base += v
		}
		b.WriteString(`</g>`)
		if label, ok := xLabel(i, len(c.Cols), col.T); ok {
			anchor := "middle"
			if i == len(c.Cols)-1 {
				anchor = "end"
			}
			fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x+colW/2, chartH-6, anchor, label)
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// xLabel labels every fifteenth column with its minute (the server's
// local time, as the pages' times are) and the last one "now".
func xLabel(i, n int, t time.Time) (string, bool) {
	switch {
	case i == n-1:
		return "now", true
	case i%15 == 0 && n-1-i > 4:
		return t.Local().Format("15:04"), true
	}
	return "", false
}

// numbers is a column's values, space-separated in series order.
func (c barChart) numbers(col chartCol) string {
	if col.None {
		return ""
	}
	parts := make([]string, len(col.Values))
	for i, v := range col.Values {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, " ")
}

// colTitle is what hovering a column shows.
func (c barChart) colTitle(col chartCol) string {
	t := col.T.Local().Format("15:04")
	if col.None {
		return t + ": no sample (the dashboard was not running)"
	}
	parts := []string{t}
	for i, v := range col.Values {
		parts = append(parts, fmt.Sprintf("%s %d", c.Series[i].Name, v))
	}
	return strings.Join(parts, " · ")
}

// niceCeil is the smallest of 1, 2, 5 times a power of ten at or above n
// (at least 1): the chart's top.
func niceCeil(n int) int {
	for p := 1; ; p *= 10 {
		for _, m := range []int{1, 2, 5} {
			if m*p >= n {
				return m * p
			}
		}
	}
}
