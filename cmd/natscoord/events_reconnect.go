package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// reconnector is how a command that outlives server restarts (events
// tail, ledger wait, work) connects: it keeps reconnecting for as long as
// it runs, and says on stderr when the connection goes, when it is back
// and what resumes then, so that a command that prints nothing is never
// mistaken for a quiet ledger. nats.go's asynchronous errors (a consumer
// that missed its heartbeats while the server restarted: "consumer not
// active") are said once per connection, in the command's words, instead
// of nats.go's raw line per occurrence.
type reconnector struct {
	opts    []nats.Option
	closed  chan struct{} // closed by the connection's last callback
	timeout time.Duration

	mu   sync.Mutex
	said map[string]bool // async errors already said since the last (re)connect
}

// reconnecting returns the reconnector of command; resumes says what
// resumes once the connection is back.
func (a *app) reconnecting(command, resumes string) *reconnector {
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = fmt.Fprintf(a.stderr, "natscoord: "+command+": "+format+"\n", args...)
	}
	return newReconnector(say, a.conn.redactAll, "reconnecting", resumes, a.conn.timeout)
}

// newReconnector says through say when the connection is lost (adding
// meanwhile, what goes on while it is) and when it is back (adding
// resumes), with errors passed through redact; timeout bounds close's
// wait.
func newReconnector(say func(format string, args ...any), redact func(string) string, meanwhile, resumes string, timeout time.Duration) *reconnector {
	r := &reconnector{closed: make(chan struct{}), timeout: timeout}
	r.opts = []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			switch {
			case nc.IsClosed():
				// the command's own Close at its end: nothing was lost.
			case err != nil:
				say("connection to the server lost (%s); %s", errLine(err, redact), meanwhile)
			default:
				say("connection to the server lost; %s", meanwhile)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			r.mu.Lock()
			r.said = nil
			r.mu.Unlock()
			say("reconnected to %s; %s", nc.ConnectedUrlRedacted(), resumes)
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			msg := errLine(err, redact)
			r.mu.Lock()
			seen := r.said[msg]
			if r.said == nil {
				r.said = make(map[string]bool)
			}
			r.said[msg] = true
			r.mu.Unlock()
			if !seen {
				say("%s (said once until the next reconnect)", msg)
			}
		}),
		// nats.go runs the callbacks in order on a goroutine of its own,
		// the closed one last: once it ran, every message was written.
		nats.ClosedHandler(func(*nats.Conn) { close(r.closed) }),
	}
	return r
}

// close closes nc, connected with r.opts, and waits (up to --timeout)
// for its callbacks to have run, so that a command that ends right after
// a reconnection still says so before it exits.
func (r *reconnector) close(nc *nats.Conn) {
	nc.Close()
	t := time.NewTimer(r.timeout)
	defer t.Stop()
	select {
	case <-r.closed:
	case <-t.C:
	}
}

// tailReconnect is the reconnector of `events tail`.
func (a *app) tailReconnect(durable bool) *reconnector {
	missed := "events published meanwhile are not shown (use --durable to get them)"
	if durable {
		missed = "the durable consumer resumes where it stopped"
	}
	return a.reconnecting("events tail", missed)
}
