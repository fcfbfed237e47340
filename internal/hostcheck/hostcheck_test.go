package hostcheck_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/hostcheck"
)

func TestLoopbackAndAllowed(t *testing.T) {
	for _, h := range []string{"localhost", "LOCALHOST", "localhost.", "127.0.0.1", "127.9.9.9", "::1", "[::1]", "::ffff:127.0.0.1"} {
		require.True(t, hostcheck.Loopback(h), h)
	}
	for _, h := range []string{"", "evil.example", "localhost.evil.example", "10.0.0.1", "0.0.0.0", "::", "127.1", "[::1]x"} {
		require.False(t, hostcheck.Loopback(h), h)
	}
	allowed := []string{"dash.internal"}
	for _, h := range []string{"localhost:8080", "[::1]:1", "127.0.0.1", "dash.internal", "DASH.internal.:443"} {
		require.True(t, hostcheck.Allowed(h, allowed), h)
	}
	for _, h := range []string{"evil.example:80", "evil.example", "dash.internal.evil:1", ""} {
		require.False(t, hostcheck.Allowed(h, allowed), h)
	}
}

func TestHandlerRefusesOtherHosts(t *testing.T) {
	h := hostcheck.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), nil, "this listener")
	for host, want := range map[string]int{"evil.example": http.StatusMisdirectedRequest, "localhost:1": http.StatusOK} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, want, w.Code, host)
	}
}
