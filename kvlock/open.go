package kvlock

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Kind names a lock backend for Open.
type Kind string

// The backends.
const (
	// KindNATS is the NATS Locker on a server the caller runs.
	KindNATS Kind = "nats"
	// KindEmbedded is the NATS Locker on an embedded server started for
	// it. A library never starts a server, so Open refuses it: the
	// constructor that can is embedlock.Open (package kvlock/embedlock),
	// which a main package imports on purpose.
	KindEmbedded Kind = "embedded"
	// KindMemory is the in-process Memory: one process, no server.
	KindMemory Kind = "memory"
)

// ErrUnknownBackend means a Backend whose Kind (or a URL whose scheme) is
// empty or not one this constructor provides.
var ErrUnknownBackend = errors.New("kvlock: unknown backend")

// Backend selects and configures the Service Open returns. Only the
// fields of the chosen Kind are used.
type Backend struct {
	// Kind selects the backend. Required: an empty or unknown Kind fails
	// with ErrUnknownBackend rather than guessing.
	Kind Kind
	// Lock configures the Locker or Memory (the zero value is valid).
	Lock Config

	// KindNATS. JetStream, when set, is used as is and stays the
	// caller's (Close does not close its connection). Otherwise Open
	// dials URL, a comma-separated list of server URLs, default
	// nats.DefaultURL ("nats://127.0.0.1:4222"), with NATSOptions, and
	// the Service's Close closes that connection after the Locker.
	JetStream   jetstream.JetStream
	URL         string
	NATSOptions []nats.Option

	// KindEmbedded (embedlock.Open only). DataDir keeps the embedded
	// server's JetStream files; default a temporary directory removed on
	// Close.
	DataDir string

	// KindMemory. Clock is the Memory's clock, default RealClock.
	Clock Clock
}

// Open returns the Service b selects: the NATS Locker for KindNATS, the
// in-process Memory for KindMemory. KindEmbedded and anything else fail
// with ErrUnknownBackend (see KindEmbedded). Invalid Lock configs fail
// with ErrInvalidConfig.
func Open(ctx context.Context, b Backend) (Service, error) {
	switch b.Kind {
	case KindNATS:
		return openNATS(ctx, b)
	case KindMemory:
		var opts []MemoryOption
		if b.Clock != nil {
			opts = append(opts, WithClock(b.Clock))
		}
		m, err := NewMemory(b.Lock, opts...)
		if err != nil {
			return nil, err
		}
		return m, nil
	case KindEmbedded:
		return nil, fmt.Errorf("%w: %q starts a server, which kvlock never does: use embedlock.Open from package kvlock/embedlock", ErrUnknownBackend, b.Kind)
	case "":
		return nil, fmt.Errorf("%w: no Kind (want %q, %q or %q)", ErrUnknownBackend, KindNATS, KindEmbedded, KindMemory)
	}
	return nil, fmt.Errorf("%w: Kind %q (want %q, %q or %q)", ErrUnknownBackend, b.Kind, KindNATS, KindEmbedded, KindMemory)
}

// OpenURL is Open for the Backend ParseURL makes of rawURL, with cfg as
// its Lock config.
func OpenURL(ctx context.Context, rawURL string, cfg Config) (Service, error) {
	b, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	b.Lock = cfg
	return Open(ctx, b)
}

// ParseURL maps a backend URL to a Backend:
//
//	nats://host:4222[,nats://other:4222]   KindNATS (also tls://, ws://, wss://), URL as given
//	embedded:                              KindEmbedded, temporary data dir
//	embedded:/var/lib/locks                KindEmbedded, DataDir /var/lib/locks
//	memory:                                KindMemory
//
// Any other scheme fails with ErrUnknownBackend.
func ParseURL(rawURL string) (Backend, error) {
	scheme, rest, ok := strings.Cut(rawURL, ":")
	if !ok || scheme == "" {
		return Backend{}, fmt.Errorf("%w: %q has no scheme (want nats://…, embedded: or memory:)", ErrUnknownBackend, rawURL)
	}
	switch strings.ToLower(scheme) {
	case "nats", "tls", "ws", "wss":
		for _, u := range strings.Split(rawURL, ",") {
			if _, err := url.Parse(strings.TrimSpace(u)); err != nil {
				return Backend{}, fmt.Errorf("%w: %q: %w", ErrInvalidConfig, rawURL, err)
			}
		}
		return Backend{Kind: KindNATS, URL: rawURL}, nil
	case "embedded":
		dir := strings.TrimPrefix(rest, "//")
		return Backend{Kind: KindEmbedded, DataDir: dir}, nil
	case "memory":
		if rest != "" && rest != "//" {
			return Backend{}, fmt.Errorf("%w: %q: memory: takes no address", ErrInvalidConfig, rawURL)
		}
		return Backend{Kind: KindMemory}, nil
	}
	return Backend{}, fmt.Errorf("%w: scheme %q in %q (want nats://…, embedded: or memory:)", ErrUnknownBackend, scheme, rawURL)
}

func openNATS(ctx context.Context, b Backend) (Service, error) {
	if b.JetStream != nil {
		l, err := New(ctx, b.JetStream, b.Lock)
		if err != nil {
			return nil, err
		}
		return l.Service(), nil
	}
	u := b.URL
	if u == "" {
		u = nats.DefaultURL
	}
	nc, err := nats.Connect(u, b.NATSOptions...)
	if err != nil {
		return nil, fmt.Errorf("kvlock: connecting to %s: %w", u, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("kvlock: %w", err)
	}
	l, err := New(ctx, js, b.Lock)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return OnClose(l.Service(), func(context.Context) error {
		nc.Close()
		return nil
	}), nil
}

// OnClose returns s with f run after s's own Close has finished: how a
// constructor hands over a Service together with what it opened for it
// (a connection, an embedded server). f runs once, even when Close is
// called again, and only once s closed without error; Close returns its
// error.
func OnClose(s Service, f func(context.Context) error) Service {
	return &closing{Service: s, f: f}
}

type closing struct {
	Service
	f    func(context.Context) error
	mu   sync.Mutex
	done bool
	err  error
}

func (c *closing) Close(ctx context.Context) error {
	if err := c.Service.Close(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.done, c.err = true, c.f(ctx)
	}
	return c.err
}

// ForceRelease forwards to the wrapped Service.
func (c *closing) ForceRelease(ctx context.Context, key string) (bool, error) {
	fr, ok := c.Service.(ForceReleaser)
	if !ok {
		return false, fmt.Errorf("%w: backend cannot force-release", ErrUnknownBackend)
	}
	return fr.ForceRelease(ctx, key)
}
