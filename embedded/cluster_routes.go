package embedded

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"

	"github.com/natscoord/natscoord/internal/hostcheck"
)

// ClusterOptions changes how StartClusterWith wires the nodes' routes to
// each other. The zero value is what StartCluster does: every node dials
// every other node's route listener directly.
type ClusterOptions struct {
	// RouteAddr, when set, returns the address node from (0-based) dials to
	// reach node to, whose route listener is at addr ("127.0.0.1:port").
	// Tests return the address of a proxy in front of addr, which lets them
	// cut route traffic between chosen nodes while every node keeps
	// running. It is called once per ordered pair of distinct nodes before
	// any node starts, and a restarted node dials the same addresses. The
	// result must be a loopback host:port (127.0.0.1, ::1 or localhost).
	//
	// With RouteAddr set, nodes learn of each other only through these
	// addresses: a nats-server normally tells its peers where a newly met
	// node listens, and they would dial that address directly, around any
	// proxy. Each node therefore advertises, as its route address, a
	// loopback listener owned by the Cluster that closes every connection
	// at once (closed by Shutdown), so such a dial fails and is not
	// retried.
	RouteAddr func(from, to int, addr string) (string, error)
}

// routeURLs returns node from's route list: every node's listener, or with
// RouteAddr set, RouteAddr's address for every other node.
func (co ClusterOptions) routeURLs(from int, ports []int) ([]*url.URL, error) {
	var out []*url.URL
	for to, p := range ports {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		if co.RouteAddr != nil {
			if to == from {
				continue
			}
			a, err := co.RouteAddr(from, to, addr)
			if err != nil {
				return nil, invalid("RouteAddr(%d, %d): %v", from, to, err)
			}
			if err := checkLoopbackAddr(a); err != nil {
				return nil, invalid("RouteAddr(%d, %d) = %q: %v", from, to, a, err)
			}
			addr = a
		}
		out = append(out, &url.URL{Scheme: "nats-route", Host: addr})
	}
	return out, nil
}

// checkLoopbackAddr accepts host:port with a loopback host and a port in
// 1..65535.
func checkLoopbackAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q out of range", port)
	}
	if !hostcheck.Loopback(host) {
		return fmt.Errorf("host %q is not a loopback address", host)
	}
	return nil
}

// routeSink is a loopback listener that accepts route connections and
// closes them at once: the address nodes advertise when RouteAddr is set.
type routeSink struct {
	ln net.Listener
	wg sync.WaitGroup
}

func newRouteSink() (*routeSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("embedded: route sink: %w", err)
	}
	s := &routeSink{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			_ = c.Close()
		}
	})
	return s, nil
}

func (s *routeSink) addr() string { return s.ln.Addr().String() }

func (s *routeSink) close() {
	if s == nil {
		return
	}
	_ = s.ln.Close()
	s.wg.Wait()
}
