package kvlock_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

func TestParseURL(t *testing.T) {
	for in, want := range map[string]kvlock.Backend{
		"nats://127.0.0.1:4222":       {Kind: kvlock.KindNATS, URL: "nats://127.0.0.1:4222"},
		"nats://a:4222,nats://b:4222": {Kind: kvlock.KindNATS, URL: "nats://a:4222,nats://b:4222"},
		"tls://secure:4222":           {Kind: kvlock.KindNATS, URL: "tls://secure:4222"},
		"embedded:":                   {Kind: kvlock.KindEmbedded},
		"embedded:/var/lib/locks":     {Kind: kvlock.KindEmbedded, DataDir: "/var/lib/locks"},
		"embedded:///var/lib/locks":   {Kind: kvlock.KindEmbedded, DataDir: "/var/lib/locks"},
		"memory:":                     {Kind: kvlock.KindMemory},
		"MEMORY:":                     {Kind: kvlock.KindMemory},
	} {
		got, err := kvlock.ParseURL(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "redis://x:6379", "local:", "localhost:4222x", "nats"} {
		_, err := kvlock.ParseURL(in)
		require.ErrorIs(t, err, kvlock.ErrUnknownBackend, "%q", in)
	}
	_, err := kvlock.ParseURL("memory:somewhere")
	require.ErrorIs(t, err, kvlock.ErrInvalidConfig)
}

func TestOpenKinds(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)

	// nats:// dials, and the Service's Close closes what it dialed.
	s, err := kvlock.OpenURL(ctx, n.Server.ClientURL(), kvlock.Config{TTL: 2 * time.Second})
	require.NoError(t, err)
	l, ok, err := s.TryAcquire(ctx, "a")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.Close(ctx))
	require.NoError(t, s.Close(ctx))
	require.ErrorIs(t, context.Cause(l.Context()), kvlock.ErrReleased)

	// A borrowed JetStream handle stays the caller's.
	s, err = kvlock.Open(ctx, kvlock.Backend{Kind: kvlock.KindNATS, JetStream: n.JS})
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))
	require.False(t, n.NC.IsClosed())

	s, err = kvlock.OpenURL(ctx, "memory:", kvlock.Config{})
	require.NoError(t, err)
	require.IsType(t, &kvlock.Memory{}, s)
	require.NoError(t, s.Close(ctx))

	for _, b := range []kvlock.Backend{{}, {Kind: "redis"}, {Kind: kvlock.KindEmbedded}} {
		_, err := kvlock.Open(ctx, b)
		require.ErrorIs(t, err, kvlock.ErrUnknownBackend, "%q", b.Kind)
	}
	_, err = kvlock.OpenURL(ctx, "embedded:", kvlock.Config{})
	require.ErrorContains(t, err, "embedlock")
	_, err = kvlock.OpenURL(ctx, "memory:", kvlock.Config{TTL: -time.Second})
	require.ErrorIs(t, err, kvlock.ErrInvalidConfig)
	_, err = kvlock.Open(ctx, kvlock.Backend{Kind: kvlock.KindNATS, URL: "nats://127.0.0.1:1", NATSOptions: nil})
	require.Error(t, err, "no server there")
}

// kvlock must never link nats-server: only embedlock (and tests) do.
func TestNoServerInImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/natscoord/natscoord/kvlock").CombinedOutput()
	if err != nil {
		t.Skipf("go list unavailable: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		require.False(t, strings.HasPrefix(dep, "github.com/nats-io/nats-server"), "kvlock imports %s", dep)
		require.NotEqual(t, "github.com/natscoord/natscoord/embedded", dep)
	}
}
