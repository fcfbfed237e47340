package natstest

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
)

// Restartable is an embedded server that a test stops and starts again
// on the same port and data dir: to a client, the server going away and
// coming back with its streams. The current server is shut down when the
// test ends.
type Restartable struct {
	*embedded.Server
	t    testing.TB
	dir  string
	port int
}

// StartRestartable starts a Restartable on a free port.
func StartRestartable(t testing.TB) *Restartable {
	t.Helper()
	r := &Restartable{t: t, dir: t.TempDir()}
	r.start()
	u, err := url.Parse(r.ClientURL())
	require.NoError(t, err)
	r.port, err = strconv.Atoi(u.Port())
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
	return r
}

func (r *Restartable) start() {
	r.t.Helper()
	s, err := embedded.Start(Context(r.t, 30*time.Second), embedded.Options{DataDir: r.dir, Port: r.port})
	require.NoError(r.t, err)
	r.Server = s
}

// Restart shuts the server down and starts it again.
func (r *Restartable) Restart() {
	r.t.Helper()
	r.Stop()
	r.Start()
}

// Stop shuts the server down, for a test that waits for something before
// it starts it again (Start): an outage of the length it needs.
func (r *Restartable) Stop() {
	r.t.Helper()
	require.NoError(r.t, r.Shutdown(Context(r.t, 30*time.Second)))
}

// Start starts the stopped server again, on the same port and data dir.
func (r *Restartable) Start() {
	r.t.Helper()
	r.start()
}
