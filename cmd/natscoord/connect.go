package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
)

// connFlags are the connection flags of the nats CLI.
type connFlags struct {
	server   string
	user     string
	password secretFlag
	creds    string
	tlsCA    string
	tlsCert  string
	tlsKey   string
	timeout  time.Duration
}

func (c *connFlags) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVarP(&c.server, "server", "s", "", "NATS server URLs, comma separated (default $NATS_URL, else nats://127.0.0.1:4222)")
	c.password = secretFlag{flag: "password", fileFlag: "password-file", env: "NATS_PASSWORD"}
	f.StringVar(&c.user, "user", "", "user name or token (default $NATS_USER)")
	f.StringVar(&c.password.value, "password", "", "password for --user"+c.password.help())
	f.StringVar(&c.password.file, "password-file", "", "file holding the password for --user (default: $NATS_PASSWORD)")
	f.StringVar(&c.creds, "creds", "", "user credentials file")
	f.StringVar(&c.tlsCA, "tlsca", "", "CA certificate to verify the server")
	f.StringVar(&c.tlsCert, "tlscert", "", "client certificate")
	f.StringVar(&c.tlsKey, "tlskey", "", "client private key")
	f.DurationVar(&c.timeout, "timeout", 5*time.Second, "time to wait for the server and for each operation")
}

// url returns the server URL: the flag, then NATS_URL, then the default.
func (c *connFlags) url() string {
	if c.server != "" {
		return c.server
	}
	if u := os.Getenv("NATS_URL"); u != "" {
		return u
	}
	return nats.DefaultURL
}

func (c *connFlags) options() ([]nats.Option, error) {
	opts := []nats.Option{nats.Name("natscoord-cli"), nats.Timeout(c.timeout), nats.MaxReconnects(0)}
	user := c.user
	if user == "" {
		user = os.Getenv("NATS_USER")
	}
	password, err := c.password.resolve()
	if err != nil {
		return nil, err
	}
	switch {
	case user != "" && password != "":
		opts = append(opts, nats.UserInfo(user, password))
	case user != "":
		opts = append(opts, nats.Token(user))
	case password != "":
		return nil, errors.New("a password (--password, --password-file or $NATS_PASSWORD) needs --user")
	}
	if c.creds != "" {
		if _, err := os.Stat(c.creds); err != nil {
			return nil, fmt.Errorf("--creds: %w", err)
		}
		opts = append(opts, nats.UserCredentials(c.creds))
	}
	if c.tlsCA != "" {
		opts = append(opts, nats.RootCAs(c.tlsCA))
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return nil, errors.New("--tlscert and --tlskey go together")
	}
	if c.tlsCert != "" {
		opts = append(opts, nats.ClientCert(c.tlsCert, c.tlsKey))
	}
	return opts, nil
}

// connect opens a connection and a JetStream handle; extra options are
// applied after the common ones (a long-running command may reconnect).
// The caller closes the connection.
func (c *connFlags) connect(ctx context.Context, extra ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	if c.timeout <= 0 {
		return nil, nil, errors.New("--timeout must be positive")
	}
	opts, err := c.options()
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, extra...) // later options win
	nc, err := nats.Connect(c.url(), opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect %s: %w", redactURLs(c.url()), err)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(c.timeout))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// opContext bounds one CLI operation by --timeout.
func (c *connFlags) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// withJS connects, runs fn with the connection's JetStream handle and
// closes the connection, all bounded by one --timeout: the one connection
// of a one-shot command.
func (a *app) withJS(parent context.Context, fn func(context.Context, jetstream.JetStream) error) error {
	ctx, cancel := a.conn.opContext(parent)
	defer cancel()
	var refused refusals
	nc, js, err := a.conn.connect(ctx, refused.option())
	if err != nil {
		return err
	}
	defer nc.Close()
	return refused.explain(fn(ctx, js), a.conn.redactAll)
}

// refusals keeps what the server refused a one-shot command's connection.
// A subject the user may not publish or subscribe to is refused
// asynchronously (nats.go printed its own lines for it), and the request
// it was for then times out: the command's one error line would say only
// "context deadline exceeded". explain adds the first refusal to it.
type refusals struct {
	mu    sync.Mutex
	first error
}

func (r *refusals) option() nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.first == nil {
			r.first = err
		}
	})
}

// explain returns err with the first refusal, if there was one, passed
// through redact.
func (r *refusals) explain(err error, redact func(string) string) error {
	r.mu.Lock()
	first := r.first
	r.mu.Unlock()
	if err == nil || first == nil {
		return err
	}
	return fmt.Errorf("%w; the server refused: %s", err, errLine(first, redact))
}
