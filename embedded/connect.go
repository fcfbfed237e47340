package embedded

import (
	"fmt"

	"github.com/nats-io/nats.go"
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
