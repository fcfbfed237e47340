package embedded

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// clientOptions are the options every connection to a server started with
// o needs: a name, and the configured credentials (User/Password or Token)
// and CA file. Server.Connect and the network connections of a Cluster
// share them, so that credentials are added in one place.
func clientOptions(o Options) []nats.Option {
	opts := []nats.Option{nats.Name("natscoord-embedded")}
	if a := o.Auth; a.User != "" {
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	} else if a.Token != "" {
		opts = append(opts, nats.Token(a.Token))
	}
	if t := o.TLS; t != nil && t.CAFile != "" {
		opts = append(opts, nats.RootCAs(t.CAFile))
	}
	return opts
}

// connectURLs dials url over the network with the credentials of o,
// reconnecting for ever (nodes of a cluster stop and restart).
func connectURLs(url string, o Options, extra ...nats.Option) (*nats.Conn, error) {
	opts := append(clientOptions(o), nats.MaxReconnects(-1))
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("embedded: connect %s: %w", url, err)
	}
	return nc, nil
}

// ownedJS is the connection behind Server.JetStream and Cluster.JetStream:
// opened on first use with the owner's credentials, closed by the owner's
// Shutdown, after which it is not opened again.
type ownedJS struct {
	mu     sync.Mutex
	nc     *nats.Conn
	js     jetstream.JetStream
	closed bool
}

// get returns the handle, connecting with connect the first time.
func (o *ownedJS) get(connect func() (*nats.Conn, error)) (jetstream.JetStream, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, ErrShutdown
	}
	if o.js != nil {
		return o.js, nil
	}
	nc, err := connect()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("embedded: jetstream: %w", err)
	}
	o.nc, o.js = nc, js
	return js, nil
}

// close closes the connection, if one was opened, for good.
func (o *ownedJS) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if o.nc != nil {
		o.nc.Close()
		o.nc, o.js = nil, nil
	}
}
