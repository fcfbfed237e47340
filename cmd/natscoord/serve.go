package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/embedded"
)

func (a *app) serveCommand() *cobra.Command {
	var (
		o                         embedded.Options
		authUser, authPass, token string
		tlsCert, tlsKey, tlsCA    string
		syncAlways, ui            bool
		uio                       uiOptions
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run an embedded NATS server with JetStream for local development",
		Long: "serve runs a single-node nats-server with JetStream in this process. It keeps its\n" +
			"data in --data-dir across restarts, listens on loopback unless told otherwise, and\n" +
			"shuts down cleanly on SIGINT or SIGTERM.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Auth = embedded.Auth{User: authUser, Password: authPass, Token: token}
			if tlsCert != "" || tlsKey != "" || tlsCA != "" {
				o.TLS = &embedded.TLS{CertFile: tlsCert, KeyFile: tlsKey, CAFile: tlsCA}
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
	f.StringVar(&o.Host, "host", "127.0.0.1", "listen address (use 0.0.0.0 to listen on all interfaces)")
	f.IntVar(&o.Port, "port", 4222, "client port (0 picks a free one)")
	f.StringVar(&authUser, "auth-user", "", "require this user name")
	f.StringVar(&authPass, "auth-password", "", "password for --auth-user")
	f.StringVar(&token, "auth-token", "", "require this token")
	f.StringVar(&tlsCert, "tls-cert", "", "server certificate (enables TLS)")
	f.StringVar(&tlsKey, "tls-key", "", "server private key")
	f.StringVar(&tlsCA, "tls-ca", "", "CA to verify client certificates")
	f.BoolVar(&syncAlways, "sync-always", false, "fsync every write before acknowledging it (slower, survives power loss)")
	f.BoolVar(&ui, "ui", false, "also serve the live dashboard (see natscoord ui), creating the default ledger and lease buckets")
	uio.register(f, func(s string) string { return "ui-" + s })
	return cmd
}
