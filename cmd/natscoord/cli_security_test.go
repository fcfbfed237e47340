package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// authServer is a server that requires user app with password secret.
func authServer(t *testing.T) (host string) {
	t.Helper()
	n := natstest.WithServer(t, func(o *embedded.Options) { o.Auth = embedded.Auth{User: "app", Password: "secret"} })
	return strings.TrimPrefix(n.Server.ClientURL(), "nats://")
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// Credentials in a server URL (a password, or a token as the user) never
// reach the output: not in a connection error (server unreachable, user
// refused, URL unparsable), with --json or from NATS_URL, nor in what the
// demo prints.
func TestServerURLCredentialsNeverPrinted(t *testing.T) {
	const pw = "pw-Xyzzy-4711"
	host := authServer(t)
	down := closedAddr(t)
	urls := map[string]string{
		"unreachable":      "nats://bob:" + pw + "@" + down,
		"unreachable list": "nats://" + down + ",nats://bob:" + pw + "@" + down,
		"token":            "nats://" + pw + "@" + down,
		"refused":          "nats://app:" + pw + "@" + host,
		"refused token":    "nats://" + pw + "@" + host,
		"no scheme":        "bob:" + pw + "@" + down,
		"bad port":         "nats://bob:" + pw + "@127.0.0.1:port",
	}
	for name, url := range urls {
		for _, args := range [][]string{
			{"--server", url, "--timeout", "2s", "ledger", "ls"},
			{"--server", url, "--timeout", "2s", "--json", "lease", "ls"},
			{"--server", url, "--timeout", "2s", "demo"},
		} {
			r := runCLI(t, args...)
			msg := requireFailure(t, r, args)
			require.NotContains(t, msg, pw, "%s: %v", name, args)
		}
		t.Run(name+" NATS_URL", func(t *testing.T) {
			t.Setenv("NATS_URL", url)
			args := []string{"--timeout", "2s", "ledger", "ls"}
			msg := requireFailure(t, runCLI(t, args...), args)
			require.NotContains(t, msg, pw)
		})
	}
	msg := requireFailure(t, runCLI(t, "--server", urls["unreachable"], "--timeout", "2s", "ledger", "ls"), nil)
	require.Contains(t, msg, "nats://***@"+down, "the URL is still named, without its credentials")

	// A demo run against the server names it, without the password.
	r := runCLI(t, "demo", "--server", "nats://app:secret@"+host, "--workers", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "on nats://***@"+host)
	require.NotContains(t, r.stdout+r.stderr, ":secret@")
}

// A password can be given without putting it in argv (where ps shows it):
// by --password-file or $NATS_PASSWORD for a connection, by
// --auth-password-file or $NATSCOORD_AUTH_PASSWORD (and the token
// likewise) for serve.
func TestPasswordsOutsideArgv(t *testing.T) {
	host := authServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(file, []byte("secret\n"), 0o600))
	url := "nats://" + host

	r := runCLI(t, "--server", url, "--user", "app", "--password-file", file, "ledger", "admit", "a", "--seq", "1")
	require.Equal(t, 0, r.code, r.stderr)
	t.Run("env", func(t *testing.T) {
		t.Setenv("NATS_PASSWORD", "secret")
		r := runCLI(t, "--server", url, "--user", "app", "ledger", "show", "a")
		require.Equal(t, 0, r.code, r.stderr)
		t.Setenv("NATS_USER", "app")
		r = runCLI(t, "--server", url, "ledger", "show", "a")
		require.Equal(t, 0, r.code, r.stderr)
	})
	require.Contains(t, requireFailure(t, runCLI(t, "--server", url, "--user", "app", "--password", "x", "--password-file", file, "ledger", "ls"), nil),
		"exclude each other")
	require.Contains(t, requireFailure(t, runCLI(t, "--server", url, "--user", "app", "--password-file", filepath.Join(dir, "none"), "ledger", "ls"), nil),
		"--password-file")
	help := runCLI(t, "ledger", "ls", "--help").stdout
	require.Contains(t, help, "--password-file")
	require.Contains(t, help, "$NATS_PASSWORD")

	// serve takes its password and token from a file or the environment.
	serve := func(t *testing.T, args ...string) string {
		t.Helper()
		b := startRun(t, append([]string{"--json", "serve", "--port", "0", "--data-dir", t.TempDir()}, args...)...)
		var info struct{ URL string }
		natstest.Eventually(t, 10*time.Second, func() bool { return json.Unmarshal([]byte(b.out.String()), &info) == nil && info.URL != "" },
			"serve printed its URL: %s", b.err.String())
		return info.URL
	}
	t.Run("password without user", func(t *testing.T) {
		t.Setenv("NATSCOORD_AUTH_PASSWORD", "secret")
		args := []string{"serve", "--port", "0", "--data-dir", t.TempDir()}
		require.Contains(t, requireFailure(t, runCLI(t, args...), args), "needs --auth-user")
	})
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("tok-123456\n"), 0o600))
	for name, c := range map[string]struct {
		env, val string
		serve    []string
		client   []string
	}{
		"password file": {serve: []string{"--auth-user", "ops", "--auth-password-file", file}, client: []string{"--user", "ops", "--password-file", file}},
		"password env":  {env: "NATSCOORD_AUTH_PASSWORD", val: "secret", serve: []string{"--auth-user", "ops"}, client: []string{"--user", "ops", "--password-file", file}},
		"token file":    {serve: []string{"--auth-token-file", tokenFile}, client: []string{"--user", "tok-123456"}},
		"token env":     {env: "NATSCOORD_AUTH_TOKEN", val: "tok-123456", serve: nil, client: []string{"--user", "tok-123456"}},
	} {
		t.Run(name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv(c.env, c.val)
			}
			url := serve(t, c.serve...)
			if c.env != "" {
				t.Setenv(c.env, "")
			}
			r := runCLI(t, append(append([]string{"--server", url}, c.client...), "--json", "lease", "ls")...)
			require.Equal(t, 0, r.code, r.stderr)
			args := []string{"--server", url, "--timeout", "2s", "lease", "ls"}
			require.Contains(t, strings.ToLower(requireFailure(t, runCLI(t, args...), args)), "authorization violation", "auth is required")
		})
	}
}

// serve refuses a non-loopback --host without authentication unless
// --insecure-listen says so, and then warns; with authentication but no
// TLS it warns that credentials cross the network unencrypted.
func TestServeNonLoopbackNeedsAuth(t *testing.T) {
	dir := t.TempDir()
	args := []string{"serve", "--host", "0.0.0.0", "--port", "0", "--data-dir", dir}
	msg := requireFailure(t, runCLI(t, args...), args)
	require.Contains(t, msg, "not a loopback address")
	require.Contains(t, msg, "--insecure-listen")

	b := startRun(t, append(args, "--insecure-listen")...)
	b.line(t, 10*time.Second, "natscoord: serving")
	require.Contains(t, b.err.String(), "no authentication")
	require.Equal(t, 0, b.stop(t).code)

	t.Setenv("NATSCOORD_AUTH_TOKEN", "tok-123456")
	b = startRun(t, args...)
	b.line(t, 10*time.Second, "natscoord: serving")
	require.Contains(t, b.err.String(), "without TLS")
	require.Equal(t, 0, b.stop(t).code)

	// Loopback needs nothing and says nothing.
	b = startRun(t, "serve", "--port", "0", "--data-dir", dir)
	b.line(t, 10*time.Second, "natscoord: serving")
	require.Empty(t, b.err.String())
	require.Equal(t, 0, b.stop(t).code)
}

// A command whose user may not use a subject it needs ends with one line
// that names the refusal, not nats.go's own lines and then "context
// deadline exceeded" alone.
func TestRefusedSubjectNamed(t *testing.T) {
	srv, err := embedded.Start(context.Background(), embedded.Options{DataDir: t.TempDir(), Auth: embedded.Auth{Users: []embedded.User{
		{Name: "admin", Password: "a"},
		{Name: "nosub", Password: "n", Publish: []string{"$JS.API.>", "$KV.>"}, Subscribe: []string{"ledger.>"}},
	}}})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
	})
	host := strings.TrimPrefix(srv.ClientURL(), "nats://")
	admin := &cli{t: t, url: "nats://admin:a@" + host}
	admin.ok("ledger", "admit", "k", "--seq", "1")

	args := []string{"--server", "nats://nosub:n@" + host, "--timeout", "1s", "ledger", "ls"}
	msg := requireFailure(t, runCLI(t, args...), args)
	require.Contains(t, msg, "the server refused: nats: permissions violation: Permissions Violation for Subscription to")
	require.NotContains(t, msg, ":n@")
}
