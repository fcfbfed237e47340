package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// reconnector is how a command that outlives server restarts (events
// tail, ledger wait) connects: it keeps reconnecting for as long as it
// runs, and says on stderr when the connection goes and when it is back
// and what resumes then, so that a command that prints nothing is never
// mistaken for a quiet ledger.
type reconnector struct {
	opts    []nats.Option
	closed  chan struct{} // closed by the connection's last callback
	timeout time.Duration
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
	r := &reconnector{closed: make(chan struct{}), timeout: a.conn.timeout}
	r.opts = []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			switch {
			case nc.IsClosed():
				// the command's own Close at its end: nothing was lost.
			case err != nil:
				say("connection to the server lost (%s); reconnecting", a.conn.redact(err.Error()))
			default:
				say("connection to the server lost; reconnecting")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			say("reconnected to %s; %s", redactURLs(nc.ConnectedUrl()), resumes)
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
