// Package embedlock opens a kvlock.Service from a backend URL or Backend,
// including kvlock.KindEmbedded: an in-process nats-server (package
// embedded) started for the Locker and stopped by its Close.
//
// It exists so that kvlock itself never starts a server and never links
// nats-server: a library depends on kvlock.Service and kvlock.Open; a main
// package (a service's entry point, a dev tool) imports embedlock when its
// configuration may say "embedded:". Every other kind is passed to
// kvlock.Open unchanged.
package embedlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/kvlock"
)

// Open is kvlock.Open that also serves kvlock.KindEmbedded: it starts a
// single-node embedded server with JetStream (listening on no network
// port: only this process reaches it) in b.DataDir (default a temporary
// directory, removed on Close), and returns the NATS Locker on it. The
// Service's Close closes the Locker, then shuts the server down.
func Open(ctx context.Context, b kvlock.Backend) (kvlock.Service, error) {
	if b.Kind != kvlock.KindEmbedded {
		return kvlock.Open(ctx, b)
	}
	srv, err := embedded.Start(ctx, embedded.Options{DataDir: b.DataDir, InProcessOnly: true})
	if err != nil {
		return nil, fmt.Errorf("embedlock: starting the embedded server: %w", err)
	}
	stop := func(ctx context.Context) error { return srv.Shutdown(ctx) }
	js, err := srv.JetStream()
	if err == nil {
		b.Kind, b.JetStream = kvlock.KindNATS, js
		var s kvlock.Service
		if s, err = kvlock.Open(ctx, b); err == nil {
			return kvlock.OnClose(s, stop), nil
		}
	}
	return nil, errors.Join(err, stop(context.WithoutCancel(ctx)))
}

// OpenURL is Open for the Backend kvlock.ParseURL makes of rawURL
// ("embedded:", "embedded:/data/dir", "nats://…", "memory:"), with cfg as
// its Lock config.
func OpenURL(ctx context.Context, rawURL string, cfg kvlock.Config) (kvlock.Service, error) {
	b, err := kvlock.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	b.Lock = cfg
	return Open(ctx, b)
}
