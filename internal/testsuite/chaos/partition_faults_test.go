package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// The faults of a partition schedule. Each heals what it did before it
// returns. Timings: nats-server's raft elects a new leader 4-9 s after
// the last heartbeat, and a leader that cannot reach a quorum steps down
// after 10 s; a partition shorter than that may leave leadership alone.

// leadersOn returns how many of r's streams node i leads as far as node i
// itself knows (an isolated leader still believes it leads).
func (r *partRun) leadersOn(i int) int {
	s := r.cc.c.Node(i)
	if s == nil {
		return 0
	}
	n := 0
	for _, st := range r.streams {
		if rep, err := s.StreamReplica(st); err == nil && rep.Leader {
			n++
		}
	}
	return n
}

// leadersAmong returns how many of r's streams some node in nodes leads.
func (r *partRun) leadersAmong(nodes []int) int {
	n := 0
	for _, st := range r.streams {
		for _, i := range nodes {
			if s := r.cc.c.Node(i); s != nil {
				if rep, err := s.StreamReplica(st); err == nil && rep.Leader {
					n++
					break
				}
			}
		}
	}
	return n
}

// moveLeaders asks every stream's leader to hand leadership to node i
// (nats-server's step-down with a preferred server), best effort within
// 3 s, and returns how many streams node i then leads.
func (r *partRun) moveLeaders(ctx context.Context, i int) int {
	name := r.cc.c.Node(i).Name()
	body, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": name}})
	deadline := time.Now().Add(3 * time.Second)
	for _, st := range r.streams {
		for time.Now().Before(deadline) {
			if rep, err := r.cc.c.Node(i).StreamReplica(st); err == nil && rep.Leader {
				break
			}
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, _ = r.cc.c.JS.Conn().RequestWithContext(rctx, "$JS.API.STREAM.LEADER.STEPDOWN."+st, body)
			cancel()
			r.cc.pause(ctx, 50*time.Millisecond)
		}
	}
	return r.leadersOn(i)
}

func others(n, i int) []int {
	var out []int
	for j := range n {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}

// leaderOf returns the node that leads the most of r's streams.
func (r *partRun) leaderOf() int {
	best, most := rand.IntN(r.cc.c.Size()), 0
	for i := range r.cc.c.Size() {
		if n := r.leadersOn(i); n > most {
			best, most = i, n
		}
	}
	return best
}

// faultLeaderIsolated moves every stream leader to one node, then cuts
// that node off from the other two in both directions for d.
func faultLeaderIsolated(d time.Duration) partFault {
	return partFault{name: "stream leader isolated in a minority", inject: func(ctx context.Context, r *partRun) string {
		l := r.leaderOf()
		led := r.moveLeaders(ctx, l)
		meta := r.cc.c.Node(l).NATS().JetStreamIsLeader()
		r.net.Isolate(l)
		r.cc.pause(ctx, d)
		rest := others(r.cc.c.Size(), l)
		elected, still := r.leadersAmong(rest), r.leadersOn(l)
		r.net.Heal()
		return fmt.Sprintf("n%d (leading %d/%d streams, meta leader %v) cut off for %v; the majority had elected %d/%d leaders while n%d still believed it led %d",
			l, led, len(r.streams), meta, d, elected, len(r.streams), l, still)
	}}
}

// faultSplit cuts a node that leads nothing (if there is one) off from
// the other two for d: a 2/1 split with the leaders in the majority.
func faultSplit(d time.Duration) partFault {
	return partFault{name: "symmetric 2/1 split", inject: func(ctx context.Context, r *partRun) string {
		n := r.cc.c.Size()
		m := rand.IntN(n)
		for _, i := range rand.Perm(n) {
			if r.leadersOn(i) == 0 {
				m = i
				break
			}
		}
		led := r.leadersOn(m)
		r.net.Partition(others(n, m), []int{m})
		r.cc.pause(ctx, d)
		r.net.Heal()
		return fmt.Sprintf("n%d (leading %d streams) apart from the other two for %v", m, led, d)
	}}
}

// faultFlapping isolates a random node for cut, heals for up, cycles
// times.
func faultFlapping(cycles int, cut, up time.Duration) partFault {
	return partFault{name: "flapping partition", inject: func(ctx context.Context, r *partRun) string {
		var seq []string
		for range cycles {
			m := rand.IntN(r.cc.c.Size())
			seq = append(seq, fmt.Sprintf("n%d", m))
			r.net.Isolate(m)
			r.cc.pause(ctx, cut)
			r.net.Heal()
			r.cc.pause(ctx, up)
		}
		return fmt.Sprintf("%d cycles of %v cut / %v healed, isolating %v", cycles, cut, up, seq)
	}}
}

// faultOneWay holds the stream leader's outgoing route traffic (outbound)
// or what the others send it (inbound) for d; the other direction flows.
func faultOneWay(d time.Duration, outbound bool) partFault {
	name := "one-way loss (leader's outbound)"
	if !outbound {
		name = "one-way loss (leader's inbound)"
	}
	return partFault{name: name, inject: func(ctx context.Context, r *partRun) string {
		l := r.leaderOf()
		led := r.moveLeaders(ctx, l)
		for _, j := range others(r.cc.c.Size(), l) {
			if outbound {
				r.net.Cut(l, j)
			} else {
				r.net.Cut(j, l)
			}
		}
		cuts := r.net.Cuts()
		r.cc.pause(ctx, d)
		elected := r.leadersAmong(others(r.cc.c.Size(), l))
		r.net.Heal()
		return fmt.Sprintf("n%d (leading %d/%d streams), cut %v for %v; the others had elected %d/%d leaders",
			l, led, len(r.streams), cuts, d, elected, len(r.streams))
	}}
}

// faultPartitionRestart isolates the stream leader and, while it is cut
// off, stops one node of the majority for down and restarts it; the
// partition heals d after it began.
func faultPartitionRestart(d, down time.Duration) partFault {
	return partFault{name: "partition + node restart", inject: func(ctx context.Context, r *partRun) string {
		l := r.leaderOf()
		led := r.moveLeaders(ctx, l)
		rest := others(r.cc.c.Size(), l)
		m := rest[rand.IntN(len(rest))]
		start := time.Now()
		r.net.Isolate(l)
		r.cc.pause(ctx, d/4)
		if err := r.cc.c.StopNode(ctx, m); err != nil {
			r.t.Errorf("stop n%d: %v", m, err)
		}
		r.cc.pause(ctx, down)
		if err := r.cc.c.RestartNode(ctx, m); err != nil {
			r.t.Fatalf("restart n%d: %v", m, err)
		}
		r.cc.count(faultNodeRestart)
		r.cc.pause(ctx, d-time.Since(start))
		elected, still := r.leadersAmong(rest), r.leadersOn(l)
		r.net.Heal()
		return fmt.Sprintf("n%d (leading %d/%d streams) cut off for %v; n%d of the majority stopped %v into it for %v and restarted; the majority had elected %d/%d leaders while n%d still believed it led %d",
			l, led, len(r.streams), d, m, d/4, down, elected, len(r.streams), l, still)
	}}
}

// shortSchedule is the `make test` form: each fault once, short.
func shortSchedule() []partFault {
	return []partFault{
		faultLeaderIsolated(6 * time.Second),
		faultSplit(4 * time.Second),
		faultFlapping(3, 1200*time.Millisecond, 800*time.Millisecond),
		faultOneWay(4*time.Second, true),
		faultPartitionRestart(5*time.Second, time.Second),
	}
}

// soakRound is one round of the soak form: partitions long enough for the
// majority to elect new leaders and for a cut-off leader to step down.
func soakRound() []partFault {
	return []partFault{
		faultLeaderIsolated(12 * time.Second),
		faultSplit(8 * time.Second),
		faultFlapping(6, 1500*time.Millisecond, time.Second),
		faultOneWay(12*time.Second, true),
		faultOneWay(12*time.Second, false),
		faultPartitionRestart(12*time.Second, 2*time.Second),
	}
}

// soakSchedule repeats soakRound to fill about d (at least one round).
func soakSchedule(d time.Duration) []partFault {
	const round = 90 * time.Second // measured-ish: faults plus recovery
	var out []partFault
	for i := 0; i == 0 || time.Duration(i)*round < d; i++ {
		out = slices.Concat(out, soakRound())
	}
	return out
}
