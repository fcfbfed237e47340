package dashboard_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// smallBufListener gives accepted connections a small send buffer, so a
// client that stops reading blocks the server's writes after a few KiB.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// A browser that stops reading its /sse stream is dropped after the
// write bound: its slot is free again (MaxStreams 1 admits a new one).
func TestSSEClientThatStopsReadingIsDropped(t *testing.T) {
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) {
		c.MaxStreams, c.StreamWriteTimeout = 1, 300*time.Millisecond
	})
	srv := httptest.NewUnstartedServer(e.Handler)
	srv.Listener = smallBufListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(2048))
	_, err = fmt.Fprintf(conn, "GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	require.NoError(t, err)
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, status, "200")
	// From here on the client reads nothing.

	get := func() int {
		resp, err := srv.Client().Get(srv.URL + "/sse")
		require.NoError(t, err)
		defer resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusServiceUnavailable, get(), "the one stream is taken")
	payload := map[string]any{"pad": strings.Repeat("x", 64)}
	for i := range 150 {
		dashtest.Admit(t, e.Ledger, fmt.Sprintf("stall-%03d-%s", i, strings.Repeat("k", 100)), payload)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return get() == http.StatusOK },
		"the stalled stream is dropped and its slot freed")
}
