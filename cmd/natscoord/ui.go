package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvlease"
)

func init() { extraCommands = append(extraCommands, (*app).uiCommand) }

// uiOptions are the dashboard's flags, shared by ui, serve --ui and
// demo --ui.
type uiOptions struct {
	listen       string
	readOnly     bool
	ledger       string
	leaseBuckets []string
	stream       string
	subjectPfx   string // the bus's subject prefix (the demo's own stream)
	token        string
	basicAuth    string
	prefix       string
	create       bool
	out          io.Writer // where the start line goes; default stdout
}

// defaultUIListen is where the dashboard listens unless told otherwise.
const defaultUIListen = "127.0.0.1:8222"

func (o *uiOptions) register(f *pflag.FlagSet, flag func(string) string) {
	f.StringVar(&o.listen, flag("listen"), defaultUIListen, "dashboard listen address (a non-loopback one needs --auth-token or --basic-auth)")
	f.BoolVar(&o.readOnly, flag("read-only"), false, "dashboard without actions (no force release, reopen or cancel)")
	f.StringVar(&o.token, flag("auth-token"), "", "dashboard: require this token (or set NATSCOORD_UI_TOKEN); browsers open any page once with ?token=")
	f.StringVar(&o.basicAuth, flag("basic-auth"), "", "dashboard: require HTTP basic auth, as user:password")
}

func (a *app) uiCommand() *cobra.Command {
	o := uiOptions{}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the live web dashboard: tasks, their graph, leases, locks and leaders",
		Long: "ui serves a dashboard of one ledger (counts, a paged task list, timelines, dependency\n" +
			"graphs) and of the leases, locks, semaphores and election leaders of kvlease buckets,\n" +
			"updated live by server-sent events, with Prometheus metrics on /metrics. It listens on\n" +
			"loopback unless told otherwise; any other address needs a token or basic auth.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			// A dashboard outlives server restarts: reconnect for ever.
			nc, js, err := a.conn.connect(ctx, nats.Name("natscoord-ui"), nats.MaxReconnects(-1))
			if err != nil {
				return err
			}
			defer nc.Close()
			_, stop, err := a.startUI(ctx, js, o)
			if err != nil {
				return err
			}
			<-ctx.Done()
			return stop()
		},
	}
	f := cmd.Flags()
	o.register(f, func(s string) string { return s })
	f.StringVar(&o.ledger, "ledger", defaultLedgerBucket, "ledger bucket to show")
	f.StringSliceVar(&o.leaseBuckets, "lease-bucket", []string{kvlease.DefaultBucket}, "kvlease bucket(s) to show (kvlock keeps locks and elections in one)")
	f.StringVar(&o.stream, "stream", "", "ledger event stream (default LEDGER)")
	f.StringVar(&o.prefix, "prefix", "", "serve under this path prefix, e.g. /ui")
	f.BoolVar(&o.create, "create", false, "create a missing ledger bucket, lease bucket or event stream")
	return cmd
}

// startUI starts the dashboard's HTTP server and says where it is. The
// returned function stops it.
func (a *app) startUI(ctx context.Context, js jetstream.JetStream, o uiOptions) (*dashboard.Handler, func() error, error) {
	h, srv, ln, err := a.listenUI(ctx, js, o)
	if err != nil {
		return nil, nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	return h, func() error {
		_ = h.Close() // ends the open event streams, so Shutdown does not wait for them
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr) // Serve failed on its own
		}
		return err
	}, nil
}

// listenUI checks the options, makes the handler and opens the listener.
func (a *app) listenUI(ctx context.Context, js jetstream.JetStream, o uiOptions) (*dashboard.Handler, *http.Server, net.Listener, error) {
	if o.token == "" {
		o.token = os.Getenv("NATSCOORD_UI_TOKEN")
	}
	var basic dashboard.BasicAuth
	if o.basicAuth != "" {
		u, p, ok := strings.Cut(o.basicAuth, ":")
		if !ok || u == "" || p == "" {
			return nil, nil, nil, errors.New("--basic-auth must be user:password")
		}
		basic = dashboard.BasicAuth{User: u, Password: p}
	}
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--listen %q: %w", o.listen, err)
	}
	loopback := isLoopback(host)
	if !loopback && o.token == "" && basic.User == "" {
		return nil, nil, nil, fmt.Errorf("--listen %s is not a loopback address: the dashboard shows every holder and can release leases, so set --auth-token (or NATSCOORD_UI_TOKEN) or --basic-auth", o.listen)
	}
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h, err := dashboard.New(bctx, dashboard.Config{JS: js, Ledger: o.ledger, LeaseBuckets: o.leaseBuckets,
		EventStream: o.stream, EventSubjectPrefix: o.subjectPfx, Create: o.create, Prefix: o.prefix, ReadOnly: o.readOnly,
		Token: o.token, BasicAuth: basic, Tasks: uiTaskActions(js, o.ledger, events.JetStreamBusConfig{Stream: o.stream, SubjectPrefix: o.subjectPfx})})
	if err != nil {
		return nil, nil, nil, err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		_ = h.Close()
		return nil, nil, nil, fmt.Errorf("dashboard: %w", err)
	}
	mux := http.NewServeMux()
	root := strings.TrimRight(o.prefix, "/")
	mux.Handle(root+"/", h)
	if root != "" {
		mux.Handle("/{$}", http.RedirectHandler(root+"/", http.StatusFound))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	out := o.out
	if out == nil {
		out = a.stdout
	}
	a.sayUI(out, "http://"+ln.Addr().String()+root+"/", loopback, o, basic)
	return h, srv, ln, nil
}

func (a *app) sayUI(w io.Writer, url string, loopback bool, o uiOptions, basic dashboard.BasicAuth) {
	if a.json {
		_ = writeJSON(w, map[string]any{"dashboard": url, "read_only": o.readOnly, "loopback": loopback})
		return
	}
	auth := "no authentication (loopback only)"
	switch {
	case o.token != "" && basic.User != "":
		auth = "token and basic auth required"
	case o.token != "":
		auth = "token required: open " + url + "?token=<token> once, or send Authorization: Bearer"
	case basic.User != "":
		auth = "basic auth required (user " + basic.User + ")"
	}
	mode := "actions enabled"
	if o.readOnly {
		mode = "read-only"
	}
	where := "loopback"
	if !loopback {
		where = "NOT loopback: reachable from other machines"
	}
	fmt.Fprintf(w, "natscoord: dashboard at %s (%s; %s; %s)\n", url, where, auth, mode)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveUI starts the dashboard on an in-process connection to s, for
// natscoord serve --ui: the default ledger, lease bucket and event stream
// are created so the page works before anything else ran.
func (a *app) serveUI(ctx context.Context, s *embedded.Server, o uiOptions) (func(), error) {
	nc, err := s.Connect(nats.Name("natscoord-ui"), nats.MaxReconnects(-1))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	o.ledger, o.create = defaultLedgerBucket, true
	_, stop, err := a.startUI(ctx, js, o)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return func() { _ = stop(); nc.Close() }, nil
}
