package natstest

import (
	"fmt"
	"net"
	"sync"
)

// RouteNet is the loopback network between the nodes of a cluster: one
// TCP proxy per ordered pair of nodes (the address node "from" dials to
// reach node "to"), each forwarding to the real route listener. Its
// RouteAddr method is the embedded.ClusterOptions hook.
//
// Each direction of each node pair can be cut. A cut direction a->b holds
// every byte a sends to b, on every connection between them whichever side
// dialed, until the direction is healed; nothing is dropped, reordered or
// corrupted, as with TCP over a link that loses its packets for a while.
// The servers see what they would see on a real network: requests that go
// unanswered, heartbeats that stop, writes that stall until a write
// deadline or ping timeout closes the connection and the dialing side
// redials (through the same proxy, so the redial is cut too). A cut in
// both directions is a partition; in one direction, one-way loss.
//
// Everything listens on 127.0.0.1 only.
type RouteNet struct {
	n int

	mu      sync.Mutex
	down    [][]bool      // down[a][b]: bytes from node a to node b are held
	changed chan struct{} // closed and replaced on every change of down
	lns     []net.Listener
	conns   map[net.Conn]struct{}
	closed  bool
	done    chan struct{} // closed by Close

	wg sync.WaitGroup
}

// NewRouteNet returns the network of an n-node cluster, every link up.
func NewRouteNet(n int) *RouteNet {
	down := make([][]bool, n)
	for i := range down {
		down[i] = make([]bool, n)
	}
	return &RouteNet{n: n, down: down, changed: make(chan struct{}), done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
}

// RouteAddr starts the proxy node from dials to reach node to (whose
// route listener is at addr) and returns its address. Use it as
// embedded.ClusterOptions.RouteAddr.
func (r *RouteNet) RouteAddr(from, to int, addr string) (string, error) {
	if from < 0 || from >= r.n || to < 0 || to >= r.n || from == to {
		return "", fmt.Errorf("natstest: route %d->%d outside a %d-node net", from, to, r.n)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = ln.Close()
		return "", fmt.Errorf("natstest: route net closed")
	}
	r.lns = append(r.lns, ln)
	r.mu.Unlock()
	r.wg.Go(func() { r.accept(ln, from, to, addr) })
	return ln.Addr().String(), nil
}

func (r *RouteNet) accept(ln net.Listener, from, to int, addr string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed
		}
		s, err := net.Dial("tcp", addr)
		if err != nil { // the node is down: refuse, as its port would
			_ = c.Close()
			continue
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			return
		}
		r.conns[c], r.conns[s] = struct{}{}, struct{}{}
		r.mu.Unlock()
		r.wg.Go(func() { r.forward(s, c, from, to) })
		r.wg.Go(func() { r.forward(c, s, to, from) })
	}
}

// forward copies src to dst, the bytes node a sends to node b, holding
// each chunk while a->b is cut. It closes both ends when either side ends.
func (r *RouteNet) forward(dst, src net.Conn, a, b int) {
	defer func() {
		_ = dst.Close()
		_ = src.Close()
		r.mu.Lock()
		delete(r.conns, dst)
		delete(r.conns, src)
		r.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !r.waitUp(a, b) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitUp waits until a->b is not cut; false once the net is closed.
func (r *RouteNet) waitUp(a, b int) bool {
	for {
		r.mu.Lock()
		up, ch, closed := !r.down[a][b], r.changed, r.closed
		r.mu.Unlock()
		if closed {
			return false
		}
		if up {
			return true
		}
		select {
		case <-ch:
		case <-r.done:
			return false
		}
	}
}

// set applies f to the link matrix and wakes held copies.
func (r *RouteNet) set(f func(down [][]bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.down)
	close(r.changed)
	r.changed = make(chan struct{})
}

// Cut stops the bytes node from sends to node to (one direction).
func (r *RouteNet) Cut(from, to int) {
	r.set(func(d [][]bool) { d[from][to] = true })
}

// Partition splits the nodes into groups that cannot reach each other in
// either direction; nodes in one group talk freely. A node listed in no
// group is alone. It replaces every earlier cut.
func (r *RouteNet) Partition(groups ...[]int) {
	group := make([]int, r.n)
	for i := range group {
		group[i] = -1 - i // alone unless listed
	}
	for g, nodes := range groups {
		for _, i := range nodes {
			group[i] = g
		}
	}
	r.set(func(d [][]bool) {
		for a := range d {
			for b := range d[a] {
				d[a][b] = a != b && group[a] != group[b]
			}
		}
	})
}

// Isolate cuts node i off from every other node in both directions,
// replacing every earlier cut.
func (r *RouteNet) Isolate(i int) {
	var rest []int
	for j := range r.n {
		if j != i {
			rest = append(rest, j)
		}
	}
	r.Partition([]int{i}, rest)
}

// Heal restores every link; held bytes flow on.
func (r *RouteNet) Heal() {
	r.set(func(d [][]bool) {
		for a := range d {
			clear(d[a])
		}
	})
}

// Cuts returns the cut directions as [from, to] pairs.
func (r *RouteNet) Cuts() [][2]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][2]int
	for a := range r.down {
		for b, d := range r.down[a] {
			if d {
				out = append(out, [2]int{a, b})
			}
		}
	}
	return out
}

// Close stops every proxy and closes every proxied connection (stop the
// cluster first: its nodes would otherwise see their routes drop), and
// waits for the proxy goroutines.
func (r *RouteNet) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.wg.Wait()
		return
	}
	r.closed = true
	close(r.done)
	lns := r.lns
	conns := make([]net.Conn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	for _, l := range lns {
		_ = l.Close()
	}
	for _, c := range conns {
		_ = c.Close()
	}
	r.wg.Wait()
}
