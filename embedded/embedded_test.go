package embedded_test

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// natstest imports embedded, which is why these tests live in the external
// package embedded_test.
func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

func TestStartStopLeavesNothing(t *testing.T) {
	tmp := isolateTempDir(t)
	ctx := natstest.Context(t, 10*time.Second)

	s, err := embedded.Start(ctx, embedded.Options{})
	require.NoError(t, err)
	require.DirExists(t, s.DataDir())
	js, err := s.JetStream()
	require.NoError(t, err)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b"})
	require.NoError(t, err)
	_, err = kv.Put(ctx, "k", []byte("v"))
	require.NoError(t, err)

	require.NoError(t, s.Shutdown(ctx))
	requireEmptyDir(t, tmp) // the temporary data dir is gone
	natstest.VerifyNone(t)
}

func TestShutdownIsIdempotent(t *testing.T) {
	ctx := natstest.Context(t, 10*time.Second)
	s, err := embedded.Start(ctx, embedded.Options{})
	require.NoError(t, err)
	nc, err := s.Connect()
	require.NoError(t, err)
	defer nc.Close()

	require.NoError(t, s.Shutdown(ctx))
	require.NoError(t, s.Shutdown(ctx))
	requireClosed(t, s.Done(), time.Second, "Done")
	natstest.Eventually(t, 5*time.Second, func() bool { return !nc.IsConnected() }, "client still connected")

	_, err = s.Connect()
	require.ErrorIs(t, err, embedded.ErrShutdown)
	_, err = s.JetStream()
	require.ErrorIs(t, err, embedded.ErrShutdown)
	_, err = s.StreamReplica("KV_b")
	require.ErrorIs(t, err, embedded.ErrShutdown)
}

func TestShutdownContextEnded(t *testing.T) {
	s, err := embedded.Start(context.Background(), embedded.Options{})
	require.NoError(t, err)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	// Shutdown still completes in the background; a second call waits for it.
	err = s.Shutdown(ended)
	if err != nil {
		require.ErrorIs(t, err, context.Canceled)
	}
	shutdown(t, s)
	requireClosed(t, s.Done(), time.Second, "Done")
}

func TestPersistenceAcrossRestart(t *testing.T) {
	ctx := natstest.Context(t, 20*time.Second)
	dir := t.TempDir()

	s, err := embedded.Start(ctx, embedded.Options{DataDir: dir})
	require.NoError(t, err)
	js, err := s.JetStream()
	require.NoError(t, err)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "persist", History: 5})
	require.NoError(t, err)
	_, err = kv.Put(ctx, "k", []byte("v1"))
	require.NoError(t, err)
	rev, err := kv.Put(ctx, "k", []byte("v2"))
	require.NoError(t, err)
	shutdown(t, s)
	require.DirExists(t, dir, "a set DataDir is kept")

	s = start(t, embedded.Options{DataDir: dir})
	require.Equal(t, dir, s.DataDir())
	js, err = s.JetStream()
	require.NoError(t, err)
	kv, err = js.KeyValue(ctx, "persist")
	require.NoError(t, err)
	e, err := kv.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v2", string(e.Value()))
	require.Equal(t, rev, e.Revision(), "revisions survive a restart")
	hist, err := kv.History(ctx, "k")
	require.NoError(t, err)
	require.Len(t, hist, 2)
	// The next write continues the revision sequence.
	next, err := kv.Put(ctx, "k", []byte("v3"))
	require.NoError(t, err)
	require.Equal(t, rev+1, next)
}

func TestLoopbackOnlyByDefault(t *testing.T) {
	s := start(t, embedded.Options{})
	u, err := url.Parse(s.ClientURL())
	require.NoError(t, err)
	require.Equal(t, "nats", u.Scheme)
	require.Equal(t, "127.0.0.1", u.Hostname())
	require.NotEqual(t, "0", u.Port(), "a free port is chosen")

	addr, ok := s.NATS().Addr().(*net.TCPAddr)
	require.True(t, ok, "listener address %v", s.NATS().Addr())
	require.True(t, addr.IP.IsLoopback(), "listening on %v", addr)

	nc, err := nats.Connect(s.ClientURL())
	require.NoError(t, err)
	nc.Close()
}

func TestInProcessOnly(t *testing.T) {
	s := start(t, embedded.Options{InProcessOnly: true})
	require.Empty(t, s.ClientURL())
	require.Nil(t, s.NATS().Addr(), "no listener")

	ctx := natstest.Context(t, 10*time.Second)
	js, err := s.JetStream()
	require.NoError(t, err)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "inproc"})
	require.NoError(t, err)
	_, err = kv.Create(ctx, "k", []byte("v"))
	require.NoError(t, err)

	nc := natstest.Connect(t, s)
	require.True(t, nc.IsConnected())
}

func TestStreamReplicaSingleNode(t *testing.T) {
	ctx := natstest.Context(t, 10*time.Second)
	n := natstest.WithServer(t)
	_, err := n.Server.StreamReplica("KV_none")
	require.ErrorIs(t, err, embedded.ErrNoStream)

	kv, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "rep"})
	require.NoError(t, err)
	rev, err := kv.Put(ctx, "k", []byte("v"))
	require.NoError(t, err)
	r, err := n.Server.StreamReplica(embedded.KVStreamName("rep"))
	require.NoError(t, err)
	require.Equal(t, embedded.Replica{Msgs: 1, FirstSeq: 1, LastSeq: rev, Leader: true}, r)
}

func TestLoggerReceivesServerLogs(t *testing.T) {
	var buf natstest.SyncBuffer
	s := start(t, embedded.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil)), ServerName: "logged"})
	require.Equal(t, "logged", s.Name())
	require.Contains(t, buf.String(), "server=logged")
}
