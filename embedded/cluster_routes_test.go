package embedded_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestStartClusterWithRouteAddrValidated(t *testing.T) {
	ctx := natstest.Context(t, 30*time.Second)
	for name, hook := range map[string]func(from, to int, addr string) (string, error){
		"not loopback":  func(int, int, string) (string, error) { return "10.1.2.3:4222", nil },
		"no port":       func(int, int, string) (string, error) { return "127.0.0.1", nil },
		"port 0":        func(int, int, string) (string, error) { return "127.0.0.1:0", nil },
		"hook fails":    func(int, int, string) (string, error) { return "", errors.New("no proxy") },
		"wildcard host": func(int, int, string) (string, error) { return "0.0.0.0:4222", nil },
	} {
		t.Run(name, func(t *testing.T) {
			c, err := embedded.StartClusterWith(ctx, 3, embedded.Options{DataDir: t.TempDir()}, embedded.ClusterOptions{RouteAddr: hook})
			require.ErrorIs(t, err, embedded.ErrInvalidOptions)
			require.Nil(t, c)
		})
	}
}

func TestStartClusterWithRouteAddrIdentity(t *testing.T) {
	ctx := natstest.Context(t, 60*time.Second)
	var mu sync.Mutex
	pairs := map[[2]int]string{}
	c, err := embedded.StartClusterWith(ctx, 3, embedded.Options{DataDir: t.TempDir(), ReadyTimeout: 20 * time.Second},
		embedded.ClusterOptions{RouteAddr: func(from, to int, addr string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			pairs[[2]int{from, to}] = addr
			return addr, nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Shutdown(context.Background())) })
	require.Len(t, pairs, 6, "one call per ordered pair of distinct nodes")
	for p := range pairs {
		require.NotEqual(t, p[0], p[1])
	}
	js, err := c.JetStream()
	require.NoError(t, err)
	createR3Bucket(t, js, "identity")
}

// TestClusterRoutesThroughRouteNet cuts route traffic between live nodes
// and checks that messages stop and flow on exactly as cut, including
// after a node restarts while cut off from one peer (gossip must not let
// it route around the proxies).
func TestClusterRoutesThroughRouteNet(t *testing.T) {
	c := natstest.WithPartitionCluster(t, 3)
	conn := func(i int) *nats.Conn {
		nc, err := nats.Connect(c.Node(i).ClientURL())
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		return nc
	}
	sub0, nc1 := conn(0), conn(1)
	got := make(chan string, 16)
	_, err := sub0.Subscribe("rn.x", func(m *nats.Msg) { got <- string(m.Data) })
	require.NoError(t, err)
	require.NoError(t, sub0.Flush())
	// Interest reaches node 1 over the route; publish until it arrives.
	natstest.Eventually(t, 10*time.Second, func() bool {
		require.NoError(t, nc1.Publish("rn.x", []byte("hello")))
		select {
		case <-got:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}, "route 1->0 up")
	drain := func() {
		for {
			select {
			case <-got:
			case <-time.After(200 * time.Millisecond):
				return
			}
		}
	}
	drain()
	quiet := func(what string) {
		select {
		case m := <-got:
			t.Fatalf("%s: got %q through a cut route", what, m)
		case <-time.After(500 * time.Millisecond):
		}
	}

	c.Net.Cut(0, 1) // the other direction carries node 1's message
	require.NoError(t, nc1.Publish("rn.x", []byte("one-way-open")))
	require.Equal(t, "one-way-open", natstest.Recv(t, got, 5*time.Second, "1->0 open"))

	c.Net.Heal()
	c.Net.Cut(1, 0)
	require.NoError(t, nc1.Publish("rn.x", []byte("held")))
	quiet("1->0 cut")
	c.Net.Heal()
	require.Equal(t, "held", natstest.Recv(t, got, 5*time.Second, "held bytes after heal"))

	// Restart node 1 while it is cut off from node 0 but not from node 2:
	// node 2 tells node 0 about the new node 1; a direct dial would carry
	// node 0's interest to node 1 around the cut.
	c.Net.Cut(0, 1)
	c.Net.Cut(1, 0)
	ctx := natstest.Context(t, 30*time.Second)
	require.NoError(t, c.StopNode(ctx, 1))
	require.NoError(t, c.RestartNode(ctx, 1))
	nc1 = conn(1)
	for range 5 {
		require.NoError(t, nc1.Publish("rn.x", []byte("after-restart")))
		require.NoError(t, nc1.Flush())
		quiet("restarted node cut off")
	}
	require.ElementsMatch(t, [][2]int{{0, 1}, {1, 0}}, c.Net.Cuts())
	c.Net.Heal()
	natstest.Eventually(t, 15*time.Second, func() bool {
		require.NoError(t, nc1.Publish("rn.x", []byte("healed")))
		select {
		case <-got:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}, "route 1->0 after heal")
}
