package dashboard

import (
	"fmt"
	"html"
	"strings"
	"unicode/utf8"

	"github.com/natscoord/natscoord/kvledger"
)

// Drawing sizes of the SVG graph, in pixels.
const (
	nodeW, nodeH   = 158, 48
	colGap, rowGap = 56, 20
	margin         = 16
)

// svg draws g as a standalone SVG document. Every text is XML-escaped;
// links carry the query-escaped key. base is the task page's URL up to
// "?key=".
func (g graph) svg(base string) string {
	pos := map[kvledger.IdempotencyKey]*graphNode{}
	for _, n := range g.Nodes {
		pos[n.Key] = n
	}
	w := 2*margin + g.Layers*nodeW + max(0, g.Layers-1)*colGap
	hgt := 2*margin + g.MaxRows*nodeH + max(0, g.MaxRows-1)*rowGap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="dependency graph">`, w, hgt, w, hgt)
	b.WriteString(`<defs>`)
	for _, how := range []string{"done", "waiting", "blocks"} {
		fmt.Fprintf(&b, `<marker id="arrow-%s" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrow-%s"/></marker>`, how, how)
	}
	b.WriteString(`</defs>`)
	for _, e := range g.Edges {
		from, to := pos[e.From], pos[e.To]
		x1, y1 := nodeX(from)+nodeW, nodeY(from)+nodeH/2
		x2, y2 := nodeX(to), nodeY(to)+nodeH/2
		mid := (x1 + x2) / 2
		fmt.Fprintf(&b, `<path class="edge edge-%s" d="M%d,%d C%d,%d %d,%d %d,%d" marker-end="url(#arrow-%s)"><title>%s %s %s</title></path>`,
			e.How, x1, y1, mid, y1, mid, y2, x2, y2, e.How,
			esc(displayKey(string(e.From))), edgeVerb(e.How), esc(displayKey(string(e.To))))
	}
	for _, n := range g.Nodes {
		x, y := nodeX(n), nodeY(n)
		cls := "node status-" + string(n.Phase)
		if n.Missing {
			cls = "node status-missing"
		}
		if n.Focus {
			cls += " focus"
		}
		fmt.Fprintf(&b, `<a href="%s%s"><g class="%s" data-ref="%s"><title>%s</title>`,
			esc(base), esc(keyRef(string(n.Key))), cls, esc(keyRef(string(n.Key))), esc(displayKey(string(n.Key))))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="6"/>`, x, y, nodeW, nodeH)
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="label">%s</text>`, x+10, y+19, esc(clip(displayKey(string(n.Key)), 19)))
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="why">%s</text>`, x+10, y+37, esc(clip(nodeWhy(n), 25)))
		b.WriteString(`</g></a>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func nodeX(n *graphNode) int { return margin + n.Layer*(nodeW+colGap) }
func nodeY(n *graphNode) int { return margin + n.Row*(nodeH+rowGap) }

// nodeWhy is the second line of a node: its phase and why it waits.
func nodeWhy(n *graphNode) string {
	switch {
	case n.Missing:
		return "no record"
	case n.Phase == kvledger.PhaseBlocked:
		return "blocked by " + displayKey(string(n.BlockedBy))
	case n.Phase == kvledger.PhaseRunning, n.Phase == kvledger.PhaseCancelling:
		return fmt.Sprintf("%s · %s · f%d", n.Phase, displayKey(string(n.Owner)), n.Fence)
	case !n.Phase.Final() && n.Waiting > 0:
		return fmt.Sprintf("%s · waits on %d", n.Phase, n.Waiting)
	case n.Phase == kvledger.PhasePending:
		return "pending · ready"
	}
	return string(n.Phase)
}

func edgeVerb(how string) string {
	switch how {
	case "done":
		return "completed, unblocking"
	case "blocks":
		return "failed or is blocked, which blocks"
	}
	return "has not finished; it holds up"
}

func esc(s string) string { return html.EscapeString(s) }

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
