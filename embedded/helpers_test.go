package embedded_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
)

// start starts a server with opts and shuts it down on t.Cleanup.
func start(t testing.TB, opts embedded.Options) *embedded.Server {
	t.Helper()
	s, err := embedded.Start(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { shutdown(t, s) })
	return s
}

// shutdown stops s within a bounded time.
func shutdown(t testing.TB, s *embedded.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
}

// isolateTempDir points os.TempDir at a fresh empty directory and returns
// it, so a test can see whether Start left a temporary directory behind.
func isolateTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return dir
}

func requireEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "left behind in %s", dir)
}

// nkeyUser makes an nkey user without the nkeys module: the public key is
// base32(prefix 'U' byte, ed25519 key, CRC-16/XMODEM little endian), and
// the client answers the server's nonce with a raw ed25519 signature.
func nkeyUser(t *testing.T) (pub string, sign func([]byte) ([]byte, error)) {
	t.Helper()
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	raw := append([]byte{20 << 3}, pk...)
	raw = binary.LittleEndian.AppendUint16(raw, crc16XModem(raw))
	pub = base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw)
	return pub, func(nonce []byte) ([]byte, error) { return ed25519.Sign(sk, nonce), nil }
}

func crc16XModem(data []byte) uint16 {
	var crc uint16
	for _, b := range data {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// requireClosed waits up to timeout for ch to be closed.
func requireClosed(t testing.TB, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		require.False(t, ok, "%s: got a value, want closed", what)
	case <-time.After(timeout):
		require.FailNow(t, what+" not closed within "+timeout.String())
	}
}

func hostOf(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	return u.Hostname()
}
