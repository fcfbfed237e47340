package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/hostcheck"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger/worker"
)

func init() { extraCommands = append(extraCommands, (*app).uiCommand) }

// uiOptions are the dashboard's flags, shared by ui, serve --ui and
// demo --ui.
type uiOptions struct {
	listen        string
	readOnly      bool
	hidePayloads  bool
	ledger        string
	leaseBuckets  []string
	token         string
	tokenFile     string
	basicAuth     string
	basicAuthFile string
	httpsCert     string
	httpsKey      string
	allowHosts    []string
	prefix        string
	create        bool
	out           io.Writer // where the start line goes; default stdout
	// flag names a dashboard flag as this command spells it (ui: as is;
	// serve and demo: with "ui-" in front), for messages.
	flag func(string) string
}

// defaultUIListen is where the dashboard listens unless told otherwise.
const defaultUIListen = "127.0.0.1:8222"

// The environment variables the dashboard's secrets may come from, so
// that they are not in argv (which ps shows to every user).
const (
	envUIToken     = "NATSCOORD_UI_TOKEN"
	envUIBasicAuth = "NATSCOORD_UI_BASIC_AUTH"
)

func (o *uiOptions) register(f *pflag.FlagSet, flag func(string) string) {
	o.flag = flag
	f.StringVar(&o.listen, flag("listen"), defaultUIListen, fmt.Sprintf("dashboard listen address (a non-loopback one needs --%s or --%s)", flag("auth-token-file"), flag("basic-auth-file")))
	f.BoolVar(&o.readOnly, flag("read-only"), false, "dashboard without actions (no force release, reopen or cancel)")
	f.BoolVar(&o.hidePayloads, flag("hide-payloads"), false, "dashboard: never show a task's arguments or result (for payloads that hold secrets)")
	f.StringVar(&o.token, flag("auth-token"), "", "dashboard: require this token; browsers open any page once with ?token= (visible to ps: prefer $"+envUIToken+" or --"+flag("auth-token-file")+")")
	f.StringVar(&o.tokenFile, flag("auth-token-file"), "", "dashboard: require the token in this file (its first line)")
	f.StringVar(&o.basicAuth, flag("basic-auth"), "", "dashboard: require HTTP basic auth, as user:password (visible to ps: prefer $"+envUIBasicAuth+" or --"+flag("basic-auth-file")+")")
	f.StringVar(&o.basicAuthFile, flag("basic-auth-file"), "", "dashboard: require HTTP basic auth, as user:password in this file (its first line)")
	f.StringVar(&o.httpsCert, flag("https-cert"), "", "dashboard: serve HTTPS with this certificate (PEM; with --"+flag("https-key")+")")
	f.StringVar(&o.httpsKey, flag("https-key"), "", "dashboard: the private key of --"+flag("https-cert")+" (PEM)")
	f.StringSliceVar(&o.allowHosts, flag("allow-host"), nil, "dashboard without auth: also answer these Host names (a reverse proxy's), besides the loopback ones")
}

// name is the command's spelling of dashboard flag s.
func (o uiOptions) name(s string) string {
	if o.flag == nil {
		return "--" + s
	}
	return "--" + o.flag(s)
}

// secret resolves one dashboard secret from its flag (valueFlag), its
// file flag (valueFlag+"-file") or its environment variable, by the rule
// every secret flag of the CLI follows (secretFlag).
func (o uiOptions) secret(value, file, valueFlag, env string) (string, error) {
	bare := func(s string) string { return strings.TrimPrefix(o.name(s), "--") }
	sf := secretFlag{flag: bare(valueFlag), fileFlag: bare(valueFlag + "-file"), env: env, value: value, file: file}
	return sf.resolve()
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
	f.StringSliceVar(&o.leaseBuckets, "lease-bucket", []string{kvlease.DefaultBucket, worker.DefaultLeaseBucket},
		"kvlease bucket(s) to show: kvlock keeps locks and elections in "+kvlease.DefaultBucket+", natscoord work its claims in "+worker.DefaultLeaseBucket+" (one that does not exist yet is shown as absent)")
	f.StringVar(&o.prefix, "prefix", "", "serve under this path prefix, e.g. /ui")
	f.BoolVar(&o.create, "create", false, "create a missing ledger bucket or lease bucket")
	return cmd
}

// startUI starts the dashboard's HTTP server and says where it is. The
// returned function stops it.
func (a *app) startUI(ctx context.Context, js jetstream.JetStream, o uiOptions) (*dashboard.Handler, func() error, error) {
	acts := uiTaskActions(js, o.ledger)
	h, srv, ln, err := a.listenUI(ctx, js, o, acts)
	if err != nil {
		acts.close()
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
		acts.close() // no request runs an action any more, unless Shutdown gave up on one: it is refused
		return err
	}, nil
}

// listenUI checks the options, makes the handler, whose task actions are
// acts, and opens the listener.
func (a *app) listenUI(ctx context.Context, js jetstream.JetStream, o uiOptions, acts *operatorActions) (*dashboard.Handler, *http.Server, net.Listener, error) {
	var err error
	if o.token, err = o.secret(o.token, o.tokenFile, "auth-token", envUIToken); err != nil {
		return nil, nil, nil, err
	}
	if o.basicAuth, err = o.secret(o.basicAuth, o.basicAuthFile, "basic-auth", envUIBasicAuth); err != nil {
		return nil, nil, nil, err
	}
	var basic dashboard.BasicAuth
	if o.basicAuth != "" {
		u, p, ok := strings.Cut(o.basicAuth, ":")
		if !ok || u == "" || p == "" {
			return nil, nil, nil, fmt.Errorf("%s (or %s, $%s) must be user:password", o.name("basic-auth"), o.name("basic-auth-file"), envUIBasicAuth)
		}
		basic = dashboard.BasicAuth{User: u, Password: p}
	}
	tlsConf, err := o.tlsConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s %q: %w", o.name("listen"), o.listen, err)
	}
	loopback := hostcheck.Loopback(host)
	if !loopback && o.token == "" && basic.User == "" {
		return nil, nil, nil, fmt.Errorf("%s %s is not a loopback address: the dashboard shows every holder and can release leases, so set %s (or $%s) or %s (or $%s)",
			o.name("listen"), o.listen, o.name("auth-token-file"), envUIToken, o.name("basic-auth-file"), envUIBasicAuth)
	}
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	h, err := dashboard.New(bctx, dashboard.Config{Clock: wall, JS: js, Ledger: o.ledger, LeaseBuckets: o.leaseBuckets,
		Create: o.create, Prefix: o.prefix, ReadOnly: o.readOnly, HidePayloads: o.hidePayloads,
		Token: o.token, BasicAuth: basic, AllowedHosts: o.allowHosts, Tasks: acts})
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		// Say what to run: a ledger appears with the first admission
		// (natscoord ledger admit, or a worker's).
		return nil, nil, nil, fmt.Errorf("%w: nothing has created it on this server yet; admit a task first (natscoord ledger admit), point --ledger at the ledger your workers use, or run ui with --create to create it empty", err)
	}
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
	srv := uiHTTPServer(mux)
	scheme := "http://"
	if tlsConf != nil {
		srv.TLSConfig = tlsConf
		ln = tls.NewListener(ln, tlsConf)
		scheme = "https://"
	}
	out := o.out
	if out == nil {
		out = a.stdout
	}
	a.sayUI(out, scheme+ln.Addr().String()+root+"/", loopback, o, basic)
	return h, srv, ln, nil
}

// uiHTTPServer is the dashboard's server with its limits: a slow or idle
// client holds a connection for a bounded time. There is no WriteTimeout
// (it would cut the /sse streams): the dashboard bounds each of their
// writes itself (dashboard.Config.StreamWriteTimeout) and caps their
// number (MaxStreams).
func uiHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
}

// tlsConfig loads --https-cert and --https-key (nil: plain HTTP).
func (o uiOptions) tlsConfig() (*tls.Config, error) {
	if o.httpsCert == "" && o.httpsKey == "" {
		return nil, nil
	}
	if o.httpsCert == "" || o.httpsKey == "" {
		return nil, fmt.Errorf("%s and %s go together", o.name("https-cert"), o.name("https-key"))
	}
	cert, err := tls.LoadX509KeyPair(o.httpsCert, o.httpsKey)
	if err != nil {
		return nil, fmt.Errorf("%s, %s: %w", o.name("https-cert"), o.name("https-key"), err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
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

// serveUI starts the dashboard on an in-process connection to s, for
// natscoord serve --ui: the default ledger and lease bucket are created so the page works before anything else ran.
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
	o.leaseBuckets = []string{kvlease.DefaultBucket, worker.DefaultLeaseBucket}
	_, stop, err := a.startUI(ctx, js, o)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return func() { _ = stop(); nc.Close() }, nil
}
