package embedded_test

import (
	"bufio"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestTLS(t *testing.T) {
	pki := natstest.NewPKI(t)
	s := start(t, embedded.Options{TLS: &embedded.TLS{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.CAFile}})
	u, err := url.Parse(s.ClientURL())
	require.NoError(t, err)
	require.Equal(t, "tls", u.Scheme)
	require.Equal(t, "127.0.0.1", u.Hostname())

	t.Run("client with the CA connects", func(t *testing.T) {
		nc, err := nats.Connect(s.ClientURL(), nats.RootCAs(pki.CAFile))
		require.NoError(t, err)
		defer nc.Close()
		require.True(t, nc.TLSRequired())
		require.NoError(t, nc.Flush())
	})

	t.Run("client without the CA is refused", func(t *testing.T) {
		// nats.go upgrades to TLS when the server requires it, and then
		// cannot verify a certificate from an unknown CA.
		_, err := nats.Connect(s.ClientURL(), nats.NoReconnect())
		var unknown x509.UnknownAuthorityError
		require.True(t, errors.As(err, &unknown), "got %v", err)
	})

	t.Run("plain-text client is refused", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
		r := bufio.NewReader(conn)
		info, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Contains(t, info, `"tls_required":true`)
		_, err = conn.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\n"))
		require.NoError(t, err)
		// The server never answers PONG in plain text: it closes the
		// connection (possibly after an -ERR line).
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				var ne net.Error
				require.False(t, errors.As(err, &ne) && ne.Timeout(), "server neither refused nor closed")
				break
			}
			require.False(t, strings.HasPrefix(line, "PONG"), "plain-text client got %q", line)
		}
	})

	t.Run("in-process connect needs no TLS setup", func(t *testing.T) {
		nc := natstest.Connect(t, s)
		require.NoError(t, nc.Flush())
		_, err := s.JetStream()
		require.NoError(t, err)
	})
}

func TestTLSVerifyClients(t *testing.T) {
	pki := natstest.NewPKI(t)
	s := start(t, embedded.Options{TLS: &embedded.TLS{
		CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.CAFile, VerifyClients: true,
	}})

	_, err := nats.Connect(s.ClientURL(), nats.RootCAs(pki.CAFile), nats.NoReconnect())
	require.Error(t, err, "no client certificate")

	nc, err := nats.Connect(s.ClientURL(), nats.RootCAs(pki.CAFile), nats.ClientCert(pki.ClientCert, pki.ClientKey))
	require.NoError(t, err)
	nc.Close()
}
