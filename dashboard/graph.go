package dashboard

import (
	"slices"
	"strings"

	"github.com/natscoord/natscoord/kvledger"
)

// maxGraphNodes bounds a drawn graph; the page says when it was cut.
const maxGraphNodes = 150

// graphNode is one task of a dependency graph, placed in a column
// (its longest distance from a root of the drawn graph) and a row.
type graphNode struct {
	taskSummary
	Phase   kvledger.Phase // at the drawing's time; "" when Missing
	Missing bool           // named as a need but has no record
	Focus   bool
	Waiting int // needs not completed yet
	Layer   int
	Row     int
}

// graphEdge runs from a need to the task that names it.
type graphEdge struct {
	From, To kvledger.IdempotencyKey
	// How: "done" (the need completed), "waiting" (it has not finished
	// yet) or "blocks" (it failed or is blocked, which blocks To).
	How string
}

type graph struct {
	Nodes     []*graphNode
	Edges     []graphEdge
	Truncated bool
	Layers    int
	MaxRows   int
}

// buildGraph collects focus, everything it needs (transitively) and
// everything that needs it, up to maxGraphNodes, and lays it out.
func (h *Handler) buildGraph(focus kvledger.IdempotencyKey) graph {
	var g graph
	now := h.cfg.Clock.Now()
	nodes := map[kvledger.IdempotencyKey]*graphNode{}
	add := func(k kvledger.IdempotencyKey) (*graphNode, bool) {
		if n, ok := nodes[k]; ok {
			return n, false
		}
		if len(nodes) >= maxGraphNodes {
			g.Truncated = true
			return nil, false
		}
		s, ok := h.tasks.get(k)
		if !ok {
			s = taskSummary{Key: k}
		}
		n := &graphNode{taskSummary: s, Missing: !ok, Focus: k == focus}
		if ok {
			n.Phase = s.Phase(now)
		}
		nodes[k] = n
		g.Nodes = append(g.Nodes, n)
		return n, true
	}
	add(focus)
	for queue := []kvledger.IdempotencyKey{focus}; len(queue) > 0; queue = queue[1:] { // upstream
		for _, need := range nodes[queue[0]].Needs {
			if _, fresh := add(need); fresh {
				queue = append(queue, need)
			}
		}
	}
	for queue := []kvledger.IdempotencyKey{focus}; len(queue) > 0; queue = queue[1:] { // downstream
		for _, dep := range h.tasks.dependentsOf(queue[0]) {
			if d, ok := h.tasks.get(dep); !ok || !slices.Contains(d.Needs, queue[0]) {
				continue // a stale index entry: the record was rebased
			}
			if _, fresh := add(dep); fresh {
				queue = append(queue, dep)
			}
		}
	}
	// The other needs of downstream tasks, one level: what else holds
	// them up (or blocks them) belongs in the picture.
	for _, n := range slices.Clone(g.Nodes) {
		for _, need := range n.Needs {
			add(need)
		}
	}
	for _, n := range g.Nodes {
		for _, need := range n.Needs {
			if d, ok := h.tasks.get(need); !ok || d.Status != kvledger.StatusCompleted {
				n.Waiting++ // counted over every need, drawn or not
			}
			from, ok := nodes[need]
			if !ok {
				continue
			}
			how := "waiting"
			switch from.Status {
			case kvledger.StatusCompleted:
				how = "done"
			case kvledger.StatusFailed, kvledger.StatusBlocked:
				how = "blocks"
			}
			g.Edges = append(g.Edges, graphEdge{From: need, To: n.Key, How: how})
		}
	}
	g.layout(nodes)
	return g
}

// layout puts each node in the column of its longest path from a root
// and orders each column by the mean row of its needs (one barycentre
// pass), which keeps most edges short and uncrossed for build-like DAGs.
func (g *graph) layout(nodes map[kvledger.IdempotencyKey]*graphNode) {
	depth := map[kvledger.IdempotencyKey]int{}
	var visit func(k kvledger.IdempotencyKey, onPath map[kvledger.IdempotencyKey]bool) int
	visit = func(k kvledger.IdempotencyKey, onPath map[kvledger.IdempotencyKey]bool) int {
		if d, ok := depth[k]; ok {
			return d
		}
		if onPath[k] { // a cycle of needs: never claimable; draw it flat
			return 0
		}
		onPath[k] = true
		d := 0
		for _, need := range nodes[k].Needs {
			if _, ok := nodes[need]; ok {
				d = max(d, visit(need, onPath)+1)
			}
		}
		delete(onPath, k)
		depth[k] = d
		return d
	}
	for _, n := range g.Nodes {
		n.Layer = visit(n.Key, map[kvledger.IdempotencyKey]bool{})
	}
	// A source (no drawn needs) sits just left of its nearest dependent,
	// so a need drawn only for context does not stretch an edge across
	// the picture.
	deps := map[kvledger.IdempotencyKey][]*graphNode{}
	for _, n := range g.Nodes {
		for _, need := range n.Needs {
			if _, ok := nodes[need]; ok {
				deps[need] = append(deps[need], n)
			}
		}
	}
	for _, n := range g.Nodes {
		if n.Layer != 0 || len(deps[n.Key]) == 0 {
			continue
		}
		nearest := deps[n.Key][0].Layer
		for _, d := range deps[n.Key] {
			nearest = min(nearest, d.Layer)
		}
		n.Layer = max(0, nearest-1)
	}
	cols := map[int][]*graphNode{}
	for _, n := range g.Nodes {
		cols[n.Layer] = append(cols[n.Layer], n)
		g.Layers = max(g.Layers, n.Layer+1)
	}
	for l := range g.Layers {
		col := cols[l]
		bary := map[kvledger.IdempotencyKey]float64{}
		for _, n := range col {
			sum, cnt := 0.0, 0
			for _, need := range n.Needs {
				if m, ok := nodes[need]; ok && m.Layer < l {
					sum += float64(m.Row)
					cnt++
				}
			}
			if cnt > 0 {
				bary[n.Key] = sum / float64(cnt)
			}
		}
		slices.SortStableFunc(col, func(a, b *graphNode) int {
			if ba, bb := bary[a.Key], bary[b.Key]; ba != bb {
				if ba < bb {
					return -1
				}
				return 1
			}
			return strings.Compare(string(a.Key), string(b.Key))
		})
		for i, n := range col {
			n.Row = i
		}
		g.MaxRows = max(g.MaxRows, len(col))
	}
}
