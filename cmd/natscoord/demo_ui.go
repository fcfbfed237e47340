package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"
)

// demoUIOptions are demo's dashboard flags.
type demoUIOptions struct {
	on   bool
	wait time.Duration
	uiOptions
}

func (o *demoUIOptions) register(f *pflag.FlagSet) {
	f.BoolVar(&o.on, "ui", false, "serve the live dashboard of the run, wait for a browser to open it, and keep it up afterwards until Ctrl-C")
	f.DurationVar(&o.wait, "ui-wait", 15*time.Second, "with --ui: start the run when a browser opens the page, or after this long")
	o.uiOptions.register(f, func(s string) string { return "ui-" + s })
}

// waitBudget is the time the run may spend waiting for a browser, added
// to --deadline.
func (o demoUIOptions) waitBudget() time.Duration {
	if !o.on {
		return 0
	}
	return o.wait
}

// demoUI serves the dashboard of the run's ledger, says where, and waits
// for a browser (or --ui-wait) so the newcomer sees the run from its
// first event. The returned function keeps the page up until parent ends
// (Ctrl-C), then stops it; it is deferred so it runs after the summary.
func (a *app) demoUI(ctx, parent context.Context, js jetstream.JetStream, run *demoRun, o demoUIOptions) (func(), error) {
	u := o.uiOptions
	u.ledger, u.create = run.bucket, true
	if a.json {
		u.out = a.stderr // stdout carries the demo's one JSON document
	}
	h, stop, err := a.startUI(ctx, js, u)
	if err != nil {
		return nil, err
	}
	if !a.json {
		fmt.Fprintf(a.stdout, "natscoord demo: open the dashboard; the run starts when the page connects (or in %v)\n", o.wait)
	}
	select {
	case <-h.Watched():
	case <-time.After(o.wait):
	case <-ctx.Done():
	}
	return func() {
		if parent.Err() == nil {
			if !a.json {
				fmt.Fprintln(a.stdout, "natscoord demo: the dashboard stays up; Ctrl-C to stop")
			}
			<-parent.Done()
		}
		_ = stop()
	}, nil
}
