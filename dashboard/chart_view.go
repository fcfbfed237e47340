package dashboard

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"
)

// chartsData is the overview's charts: the tasks finished per minute and
// the ready backlog per kind, over the last hour.
type chartsData struct {
	Finished, Backlog chartView
	// Reading is set while the event feed is still reading the hour
	// before the dashboard started: the finished chart is not complete.
	Reading bool
	// Since is when the dashboard started: the backlog chart has no
	// minute before it.
	Since time.Time
}

// chartView is one chart as the page shows it: its SVG, its legend and
// the table of its numbers.
type chartView struct {
	SVG    template.HTML
	Series []chartSeries
	// Rows are the minutes with anything to show, newest first.
	Rows []chartCol
}

func viewOf(c barChart) chartView {
	v := chartView{SVG: template.HTML(c.svg()), Series: c.Series} // svg escapes every text
	for _, col := range slices.Backward(c.Cols) {
		if !col.None && slices.ContainsFunc(col.Values, func(n int) bool { return n > 0 }) {
			v.Rows = append(v.Rows, col)
		}
	}
	return v
}

func (h *Handler) charts() chartsData {
	now := h.cfg.Clock.Now()
	first := chartFirst(now)
	d := chartsData{Since: h.started}
	select {
	case <-h.eventsCaughtUp:
	default:
		d.Reading = true
	}
	d.Finished = viewOf(h.finishedChart(first, now))
	d.Backlog = viewOf(h.backlogChart(first, now))
	return d
}

// finishedChart is the ledger.completed events of each minute, completed
// and failed.
func (h *Handler) finishedChart(first, now time.Time) barChart {
	c := barChart{ID: "chart-finished", Title: "Tasks finished per minute, last hour",
		Series: []chartSeries{{"completed", "c-completed"}, {"failed", "c-failed"}}}
	var completed, failed int
	for i, m := range h.finishes.perMinute(first, now) {
		c.Cols = append(c.Cols, chartCol{T: first.Add(time.Duration(i) * time.Minute), Values: []int{m.Completed, m.Failed}})
		completed += m.Completed
		failed += m.Failed
	}
	c.Desc = fmt.Sprintf("Tasks that ended per minute over the last hour, stacked: %d completed and %d failed in all. The table after the chart gives each minute.", completed, failed)
	return c
}

// backlogChart is the records in phase pending per kind as each minute
// ended, the current minute's now: the chartKinds kinds with the highest
// backlog in the hour by name, the rest as "other kinds".
func (h *Handler) backlogChart(first, now time.Time) barChart {
	samples := h.backlog.window(first)
	samples[chartMinutes-1] = sampleOf(now.Truncate(time.Minute), h.tasks.pendingByKind(now))
	peak := make(map[string]int)
	for _, s := range samples {
		for _, kc := range s.kinds {
			peak[kc.Kind] = max(peak[kc.Kind], kc.N)
		}
	}
	kinds := make([]string, 0, len(peak))
	for k := range peak {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int { return cmp.Or(cmp.Compare(peak[b], peak[a]), cmp.Compare(a, b)) })
	hidden := len(kinds) > chartKinds
	kinds = kinds[:min(len(kinds), chartKinds)]
	c := barChart{ID: "chart-backlog", Title: "Ready backlog per kind, last hour"}
	series := make(map[string]int, len(kinds))
	for i, k := range kinds {
		series[k] = i
		c.Series = append(c.Series, chartSeries{kindLabel(k), fmt.Sprintf("k%d", i)})
	}
	for _, s := range samples {
		hidden = hidden || s.other > 0
	}
	if hidden {
		c.Series = append(c.Series, chartSeries{"other kinds", "k-other"})
	}
	for i, s := range samples {
		col := chartCol{T: first.Add(time.Duration(i) * time.Minute), Values: make([]int, len(c.Series)), None: s.minute == 0}
		for _, kc := range s.kinds {
			if j, ok := series[kc.Kind]; ok {
				col.Values[j] += kc.N
			} else {
				col.Values[len(col.Values)-1] += kc.N
			}
		}
		if s.other > 0 {
			col.Values[len(col.Values)-1] += s.other
		}
		c.Cols = append(c.Cols, col)
	}
	var nowParts []string
	for i, v := range c.Cols[chartMinutes-1].Values {
		nowParts = append(nowParts, fmt.Sprintf("%s %d", c.Series[i].Name, v))
	}
	c.Desc = "Tasks in phase pending per kind as each minute ended, stacked; the last column is now"
	if len(nowParts) > 0 {
		c.Desc += " (" + strings.Join(nowParts, ", ") + ")"
	}
	c.Desc += ". Minutes before the dashboard started have no sample. The table after the chart gives each minute."
	return c
}

// kindLabel is how a kind is named in a chart.
func kindLabel(k string) string {
	if k == "" {
		return "(no kind)"
	}
	return displayKey(k)
}
