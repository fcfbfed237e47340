package dashboard_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
)

// With NATS gone, the live badge is told, pages say they show the last
// known state, and a page that must read answers at once with a plain
// sentence, not after OpTimeout with a Go error chain.
func TestNATSDownIsShownNotHidden(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) { dashtest.Admit(t, e.Ledger, "t1", nil) }, nil)
	s := e.OpenSSE(t)
	require.NotContains(t, e.Page(t, "/"), `id="nats-down"`)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, e.Node.Server.Shutdown(ctx))
	s.WaitFor(t, "event: nats", `"up":false`)

	require.Contains(t, e.Page(t, "/"), `id="nats-down"`)
	start := time.Now()
	code, body := e.Get(t, "/task?key=t1")
	require.Less(t, time.Since(start), time.Second)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "NATS is unreachable")
	require.NotContains(t, body, "nats:")
	require.NotContains(t, body, "context deadline exceeded")
}
