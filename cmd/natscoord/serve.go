package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/hostcheck"
)

func (a *app) serveCommand() *cobra.Command {
	var (
		o                      embedded.Options
		authUser               string
		tlsCert, tlsKey, tlsCA string
		syncAlways, ui         bool
		insecureListen         bool
		uio                    uiOptions
	)
	authPass := secretFlag{flag: "auth-password", fileFlag: "auth-password-file", env: "NATSCOORD_AUTH_PASSWORD"}
	token := secretFlag{flag: "auth-token", fileFlag: "auth-token-file", env: "NATSCOORD_AUTH_TOKEN"}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run an embedded NATS server with JetStream for local development",
		Long: "serve runs a single-node nats-server with JetStream in this process. It keeps its\n" +
			"data in --data-dir across restarts, listens on loopback unless told otherwise, and\n" +
			"shuts down cleanly on SIGINT or SIGTERM.\n\n" +
			"A --host other than a loopback address needs authentication (--auth-user with a\n" +
			"password, or a token), since anyone who reaches the port could otherwise read and\n" +
			"change every lease, lock and ledger; --insecure-listen serves it open anyway. Give\n" +
			"secrets by file (--auth-password-file, --auth-token-file) or environment\n" +
			"($NATSCOORD_AUTH_PASSWORD, $NATSCOORD_AUTH_TOKEN) rather than as flags, which ps shows.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pass, err := authPass.resolve()
			if err != nil {
				return err
			}
			tok, err := token.resolve()
			if err != nil {
				return err
			}
			if pass != "" && authUser == "" {
				return errors.New("a password (--auth-password, --auth-password-file or $NATSCOORD_AUTH_PASSWORD) needs --auth-user")
			}
			o.Auth = embedded.Auth{User: authUser, Password: pass, Token: tok}
			if tlsCert != "" || tlsKey != "" || tlsCA != "" {
				o.TLS = &embedded.TLS{CertFile: tlsCert, KeyFile: tlsKey, CAFile: tlsCA}
			}
			if err := a.checkListen(o, insecureListen); err != nil {
				return err
			}
			o.SyncAlways = syncAlways
			s, err := embedded.Start(cmd.Context(), o)
			if err != nil {
				return err
			}
			if a.json {
				err = writeJSON(a.stdout, map[string]string{"url": s.ClientURL(), "data_dir": s.DataDir()})
			} else {
				_, err = fmt.Fprintf(a.stdout, "natscoord: serving %s (data in %s); Ctrl-C to stop\n", s.ClientURL(), s.DataDir())
			}
			if err != nil {
				_ = s.Shutdown(context.Background())
				return err
			}
			stopUI := func() {}
			if ui {
				if stopUI, err = a.serveUI(cmd.Context(), s, uio); err != nil {
					_ = s.Shutdown(context.Background())
					return err
				}
			}
			<-cmd.Context().Done()
			stopUI()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return s.Shutdown(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data-dir", "natscoord-data", "JetStream data directory (kept across restarts)")
	f.StringVar(&o.Host, "host", "127.0.0.1", "listen address (a non-loopback one, such as 0.0.0.0, needs authentication or --insecure-listen)")
	f.IntVar(&o.Port, "port", 4222, "client port (0 picks a free one)")
	f.BoolVar(&insecureListen, "insecure-listen", false, "allow a non-loopback --host without authentication")
	f.StringVar(&authUser, "auth-user", "", "require this user name")
	f.StringVar(&authPass.value, "auth-password", "", "password for --auth-user"+authPass.help())
	f.StringVar(&authPass.file, "auth-password-file", "", "file holding the password for --auth-user (default: $NATSCOORD_AUTH_PASSWORD)")
	f.StringVar(&token.value, "auth-token", "", "require this token"+token.help())
	f.StringVar(&token.file, "auth-token-file", "", "file holding the token to require (default: $NATSCOORD_AUTH_TOKEN)")
	f.StringVar(&tlsCert, "tls-cert", "", "server certificate (enables TLS)")
	f.StringVar(&tlsKey, "tls-key", "", "server private key")
	f.StringVar(&tlsCA, "tls-ca", "", "CA to verify client certificates")
	f.BoolVar(&syncAlways, "sync-always", false, "fsync every write before acknowledging it (slower, survives power loss)")
	f.BoolVar(&ui, "ui", false, "also serve the live dashboard (see natscoord ui), creating the default ledger and lease buckets")
	uio.register(f, func(s string) string { return "ui-" + s })
	return cmd
}

// checkListen refuses a non-loopback --host without authentication unless
// insecure is set, and says on stderr what a reachable server lacks (no
// authentication, or credentials sent unencrypted without TLS).
func (a *app) checkListen(o embedded.Options, insecure bool) error {
	if o.InProcessOnly || o.Host == "" || hostcheck.Loopback(o.Host) {
		return nil
	}
	auth := o.Auth.User != "" || o.Auth.Token != ""
	switch {
	case !auth && !insecure:
		return fmt.Errorf("--host %s is not a loopback address: anyone who reaches it could read and change every lease, lock and ledger; "+
			"set --auth-user with --auth-password-file, or --auth-token-file (and --tls-cert/--tls-key), or pass --insecure-listen to serve it open anyway", o.Host)
	case !auth:
		fmt.Fprintf(a.stderr, "natscoord: serve: WARNING: listening on %s with no authentication (--insecure-listen)\n", o.Host)
	case o.TLS == nil:
		fmt.Fprintf(a.stderr, "natscoord: serve: WARNING: listening on %s without TLS: credentials and data cross the network unencrypted (set --tls-cert and --tls-key)\n", o.Host)
	}
	return nil
}
