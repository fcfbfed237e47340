package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/natscoord/natscoord/internal/hostcheck"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger/worker"
	"github.com/natscoord/natscoord/opstats"
)

// workMetricsOptions are the flags of `natscoord work --metrics-listen`.
type workMetricsOptions struct {
	listen      string
	allowRemote bool
}

func (o *workMetricsOptions) register(f *pflag.FlagSet) {
	f.StringVar(&o.listen, "metrics-listen", "", "serve Prometheus metrics on GET /metrics at this address, e.g. 127.0.0.1:9464 (a non-loopback one needs --metrics-allow-remote)")
	f.BoolVar(&o.allowRemote, "metrics-allow-remote", false, "let --metrics-listen be a non-loopback address (the metrics need no authentication)")
}

// validate checks the address without listening: loopback unless
// --metrics-allow-remote, as the dashboard is loopback unless it has
// authentication (the metrics have none to offer).
func (o workMetricsOptions) validate() error {
	if o.listen == "" {
		if o.allowRemote {
			return errors.New("--metrics-allow-remote needs --metrics-listen")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil {
		return fmt.Errorf("--metrics-listen %q: %w", o.listen, err)
	}
	if !hostcheck.Loopback(host) && !o.allowRemote {
		return fmt.Errorf("--metrics-listen %s is not a loopback address: the metrics need no authentication, so add --metrics-allow-remote to serve them to other machines", o.listen)
	}
	return nil
}

// Bounds of the metrics server: a scrape is one small write, so a client
// that holds a connection open longer is cut off. Variables for a test.
var (
	metricsReadTimeout  = 10 * time.Second
	metricsWriteTimeout = 10 * time.Second
	metricsIdleTimeout  = 60 * time.Second
)

// workMetrics is what --metrics-listen adds to a worker: one
// opstats.Recorder fed by the worker's observer (attempts, pickup
// latency) and by its lease manager's (claim lease acquisitions,
// renewals and losses), served with the worker's Stats and the Go
// runtime's series on GET /metrics, all written by opstats.WriteText.
// A nil *workMetrics (no --metrics-listen) does nothing.
type workMetrics struct {
	rec    *opstats.Recorder
	leases *kvlease.Manager
	ln     net.Listener
	srv    *http.Server
	served chan error
	// loopback: the listener is on a loopback address.
	loopback bool
}

// startWorkMetrics opens the listener and the lease manager the worker
// is to use (the worker's own would report to no observer). close
// undoes both; call it once the worker is closed.
func startWorkMetrics(ctx context.Context, js jetstream.JetStream, o workOptions) (*workMetrics, error) {
	if o.metrics.listen == "" {
		return nil, nil
	}
	m := &workMetrics{rec: opstats.New()}
	ln, err := net.Listen("tcp", o.metrics.listen)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	m.ln = ln
	host, _, _ := net.SplitHostPort(o.metrics.listen)
	m.loopback = hostcheck.Loopback(host)
	m.leases, err = kvlease.NewManager(ctx, js, kvlease.Config{Bucket: o.leaseBucket, Holder: o.owner,
		Observer: kvlease.RecorderObserver(m.rec)})
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("worker: lease manager: %w", err)
	}
	return m, nil
}

// leaseManager is the worker's Config.Leases: nil (the worker makes its
// own) without metrics.
func (m *workMetrics) leaseManager() *kvlease.Manager {
	if m == nil {
		return nil
	}
	return m.leases
}

// observer adds the recorder to the worker's observer.
func (m *workMetrics) observer(o worker.Observer) worker.Observer {
	if m == nil {
		return o
	}
	return worker.Observers(o, worker.RecorderObserver(m.rec))
}

// serve starts answering scrapes with w's metrics and says where.
func (m *workMetrics) serve(w *worker.Worker, p *workPrinter) {
	if m == nil {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(rw http.ResponseWriter, _ *http.Request) {
		var b bytes.Buffer
		fams := append(append(m.rec.Families(), w.Stats().Families()...), opstats.RuntimeFamilies()...)
		if err := opstats.WriteText(&b, fams...); err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		rw.Header().Set("Content-Type", opstats.TextContentType)
		_, _ = rw.Write(b.Bytes())
	})
	var h http.Handler = mux
	if m.loopback {
		// A page whose name was rebound to 127.0.0.1 sends its own name:
		// a loopback listener answers only loopback names, as the
		// dashboard does.
		h = hostcheck.Handler(mux, nil, "a loopback metrics listener")
	}
	m.srv = &http.Server{Handler: h, ReadHeaderTimeout: metricsReadTimeout, ReadTimeout: metricsReadTimeout,
		WriteTimeout: metricsWriteTimeout, IdleTimeout: metricsIdleTimeout}
	m.served = make(chan error, 1)
	go func() { m.served <- m.srv.Serve(m.ln) }()
	p.metricsAt("http://" + m.ln.Addr().String() + "/metrics")
}

// close stops the server (its goroutine has ended when close returns)
// and the lease manager.
func (m *workMetrics) close(ctx context.Context) error {
	if m == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var err error
	if m.srv != nil {
		err = m.srv.Shutdown(cctx)
		if serr := <-m.served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
	} else {
		_ = m.ln.Close()
	}
	return errors.Join(err, m.leases.Close(cctx))
}

// metricsAt says where the metrics are served.
func (p *workPrinter) metricsAt(url string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		_ = writeJSONLine(p.w, map[string]any{"metrics": url})
		return
	}
	fmt.Fprintf(p.w, "natscoord work: metrics at %s\n", url)
}
