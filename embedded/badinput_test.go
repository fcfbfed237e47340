package embedded_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestStartRejectsBadOptions(t *testing.T) {
	file := filepath.Join(t.TempDir(), "regular-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a certificate"), 0o600))
	pki := natstest.NewPKI(t)

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	takenPort := taken.Addr().(*net.TCPAddr).Port

	cases := map[string]embedded.Options{
		"negative memory limit":    {JetStreamMaxMemory: -1},
		"negative store limit":     {JetStreamMaxStore: -1},
		"negative sync interval":   {SyncInterval: -time.Second},
		"sync always and interval": {SyncAlways: true, SyncInterval: time.Second},
		"negative ready timeout":   {ReadyTimeout: -time.Second},
		"port out of range":        {Port: 70000},
		"port in use":              {Port: takenPort},
		"data dir under a file":    {DataDir: filepath.Join(file, "data")},
		"password without user":    {Auth: embedded.Auth{Password: "p"}},
		"token and user":           {Auth: embedded.Auth{Token: "t", User: "u"}},
		"user and users":           {Auth: embedded.Auth{User: "u", Users: []embedded.User{{Name: "v"}}}},
		"user without name":        {Auth: embedded.Auth{Users: []embedded.User{{Password: "p"}}}},
		"duplicate user":           {Auth: embedded.Auth{Users: []embedded.User{{Name: "a"}, {Name: "a"}}}},
		"not a user nkey":          {Auth: embedded.Auth{NKeys: []string{"Nxyz"}}},
		"TLS without key":          {TLS: &embedded.TLS{CertFile: pki.CertFile}},
		"TLS cert file missing":    {TLS: &embedded.TLS{CertFile: filepath.Join(t.TempDir(), "none.pem"), KeyFile: pki.KeyFile}},
		"TLS CA file missing":      {TLS: &embedded.TLS{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: filepath.Join(t.TempDir(), "none.pem")}},
		"TLS cert not PEM":         {TLS: &embedded.TLS{CertFile: garbage, KeyFile: pki.KeyFile}},
		"TLS verify without CA":    {TLS: &embedded.TLS{CertFile: pki.CertFile, KeyFile: pki.KeyFile, VerifyClients: true}},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			tmp := isolateTempDir(t)
			s, err := embedded.Start(context.Background(), opts)
			require.ErrorIs(t, err, embedded.ErrInvalidOptions)
			require.Nil(t, s)
			t.Log(err)
			requireEmptyDir(t, tmp)
			natstest.VerifyNone(t)
		})
	}
}

func TestStartWithEndedContext(t *testing.T) {
	tmp := isolateTempDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := embedded.Start(ctx, embedded.Options{})
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, s)
	requireEmptyDir(t, tmp)
	natstest.VerifyNone(t)
}

func TestStartClusterRejectsBadInput(t *testing.T) {
	tmp := isolateTempDir(t)
	ctx := context.Background()
	for _, n := range []int{-1, 0, 1} {
		_, err := embedded.StartCluster(ctx, n, embedded.Options{})
		require.ErrorIs(t, err, embedded.ErrInvalidOptions, "n=%d", n)
	}
	_, err := embedded.StartCluster(ctx, 3, embedded.Options{InProcessOnly: true})
	require.ErrorIs(t, err, embedded.ErrInvalidOptions)
	_, err = embedded.StartCluster(ctx, 3, embedded.Options{JetStreamMaxStore: -1})
	require.ErrorIs(t, err, embedded.ErrInvalidOptions)
	requireEmptyDir(t, tmp)
	natstest.VerifyNone(t)
}

// A failure nats-server itself reports after validation passed (here: an
// address of no local interface, from TEST-NET-1) still leaves nothing
// behind.
func TestStartFailsWhenServerCannotListen(t *testing.T) {
	tmp := isolateTempDir(t)
	s, err := embedded.Start(context.Background(), embedded.Options{Host: "192.0.2.1"})
	require.ErrorIs(t, err, embedded.ErrNotReady)
	require.Nil(t, s)
	t.Log(err)
	requireEmptyDir(t, tmp)
	natstest.VerifyNone(t)
}
