package embedded

import (
	"fmt"

	"github.com/nats-io/nats.go"
)

// connectURLs dials url over the network with the credentials of o.
func connectURLs(url string, o Options, extra ...nats.Option) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name("natscoord-embedded"), nats.MaxReconnects(-1)}
	if o.Auth.User != "" {
		opts = append(opts, nats.UserInfo(o.Auth.User, o.Auth.Password))
	} else if o.Auth.Token != "" {
		opts = append(opts, nats.Token(o.Auth.Token))
	}
	if o.TLS != nil && o.TLS.CAFile != "" {
		opts = append(opts, nats.RootCAs(o.TLS.CAFile))
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("embedded: connect %s: %w", url, err)
	}
	return nc, nil
}
