package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// ErrInvalidConfig is returned by New for a Config it refuses before any
// I/O.
var ErrInvalidConfig = errors.New("dashboard: invalid configuration")

// Config configures a Handler. Only JS is required; every other field
// states its default.
type Config struct {
	// JS is the JetStream handle every read and action uses (required).
	JS jetstream.JetStream
	// Ledger is the ledger's KV bucket. Default "natscoord_ledger" (the
	// CLI's default). It is also the event source the dashboard follows.
	Ledger string
	// LeaseBuckets are the kvlease buckets to show (kvlock keeps its
	// locks and elections in one too). Default [kvlease.DefaultBucket].
	LeaseBuckets []string
	// Create makes New create a missing ledger bucket or lease bucket,
	// for a development server that starts empty. Default
	// false: a missing one is an error naming it (looking must not write).
	Create bool
	// Prefix is the path the handler is mounted under, such as "/ui".
	// Default "": the root. Requests must carry the prefix (mount it with
	// mux.Handle(prefix+"/", h)).
	Prefix string
	// ReadOnly removes every action: no button is rendered and every
	// action endpoint answers 403.
	ReadOnly bool
	// Tasks performs reopen and cancel. Default nil: those actions are
	// not offered (force-releasing a lease needs nothing extra).
	Tasks TaskActions
	// Token, when set, is required on every request: as
	// "Authorization: Bearer <token>", or by the cookie set by visiting
	// any page with ?token=<token> (the cookie holds an HMAC keyed by the
	// token, not the token). With BasicAuth set too, a browser needs both
	// (basic auth and the cookie), while a valid Bearer header alone is
	// accepted: one Authorization header cannot carry both.
	Token string
	// BasicAuth, when User is set, requires HTTP basic authentication.
	BasicAuth BasicAuth
	// AllowedHosts are host names (no port) accepted in the Host header
	// besides the loopback ones when neither Token nor BasicAuth is set,
	// such as the name of a reverse proxy in front of the dashboard.
	// Without a Token or BasicAuth any other Host is refused (421), which
	// stops DNS rebinding. Ignored with either set.
	AllowedHosts []string
	// KindOf names a record's kind for the kind filter. Default: the
	// record's own kind when the ledger stores one (its "kind" field),
	// else the "kind" field of a JSON object payload, else "".
	KindOf func(kvledger.TaskState) string
	// HidePayloads keeps every task's arguments and result off the
	// pages, for ledgers whose payloads hold secrets: the task page then
	// says they are hidden. Default false: the task page shows them,
	// pretty-printed and cut at 16 KiB.
	HidePayloads bool
	// PageSize is the number of tasks per page. Default 50, at most 500.
	PageSize int
	// MaxStreams caps the open /sse streams (each holds a goroutine and
	// a send buffer); one more is answered 503 and the browser's
	// EventSource tries again later. Default 100.
	MaxStreams int
	// StreamWriteTimeout bounds each write to an /sse stream: a browser
	// that stops reading is disconnected after it, which frees its
	// goroutine and buffer. Default 10s.
	StreamWriteTimeout time.Duration
	// OpTimeout bounds every read and action a request makes. Default 5s.
	OpTimeout time.Duration
	// Actor is recorded as the actor of the dashboard's actions. Default
	// "natscoord-ui".
	Actor string
	// Logger receives consumer and action errors. Default: discard.
	Logger *slog.Logger
	// Clock is the clock for the page's "age" columns, phases and
	// throughput: natscoord's one clock interface (Now and AfterFunc;
	// kvlock.RealClock and kvlock.ManualClock are two). Default the system
	// clock.
	Clock clock.Clock
}

// BasicAuth is a user and password for HTTP basic authentication.
type BasicAuth struct {
	User, Password string
}

func (c Config) withDefaults() (Config, error) {
	if c.JS == nil {
		return c, fmt.Errorf("%w: JS is required", ErrInvalidConfig)
	}
	if c.Ledger == "" {
		c.Ledger = "natscoord_ledger"
	}
	if len(c.LeaseBuckets) == 0 {
		c.LeaseBuckets = []string{kvlease.DefaultBucket}
	}
	c.Prefix = strings.TrimRight(c.Prefix, "/")
	if c.Prefix != "" && !strings.HasPrefix(c.Prefix, "/") {
		return c, fmt.Errorf("%w: Prefix %q must start with /", ErrInvalidConfig, c.Prefix)
	}
	if c.BasicAuth.User == "" && c.BasicAuth.Password != "" {
		return c, fmt.Errorf("%w: BasicAuth has a password but no user", ErrInvalidConfig)
	}
	c.AllowedHosts = slices.Clone(c.AllowedHosts)
	for i, hn := range c.AllowedHosts {
		if hn == "" || strings.ContainsAny(hn, ":/ ") {
			return c, fmt.Errorf("%w: AllowedHosts %q is not a host name (no port, no scheme)", ErrInvalidConfig, hn)
		}
		c.AllowedHosts[i] = strings.TrimSuffix(strings.ToLower(hn), ".")
	}
	if c.KindOf == nil {
		c.KindOf = payloadKind
	}
	switch {
	case c.PageSize == 0:
		c.PageSize = 50
	case c.PageSize < 0 || c.PageSize > 500:
		return c, fmt.Errorf("%w: PageSize %d is not in 1..500", ErrInvalidConfig, c.PageSize)
	}
	switch {
	case c.MaxStreams == 0:
		c.MaxStreams = 100
	case c.MaxStreams < 0:
		return c, fmt.Errorf("%w: MaxStreams must be positive", ErrInvalidConfig)
	}
	switch {
	case c.StreamWriteTimeout == 0:
		c.StreamWriteTimeout = 10 * time.Second
	case c.StreamWriteTimeout < 0:
		return c, fmt.Errorf("%w: StreamWriteTimeout must be positive", ErrInvalidConfig)
	}
	switch {
	case c.OpTimeout == 0:
		c.OpTimeout = 5 * time.Second
	case c.OpTimeout < 0:
		return c, fmt.Errorf("%w: OpTimeout must be positive", ErrInvalidConfig)
	}
	if c.Actor == "" {
		c.Actor = "natscoord-ui"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real()
	}
	return c, nil
}

// payloadKind is the default KindOf. The record's kind is read from its
// JSON form (payload left out), so it is found in any ledger version
// whose records carry one.
func payloadKind(s kvledger.TaskState) string {
	bare := s
	bare.Task = nil
	if b, err := json.Marshal(bare); err == nil {
		var r struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(b, &r) == nil && r.Kind != "" {
			return r.Kind
		}
	}
	return kindOfPayload(s)
}

func kindOfPayload(s kvledger.TaskState) string {
	if m, ok := s.Task.(map[string]any); ok {
		if k, ok := m["kind"].(string); ok {
			return k
		}
	}
	return ""
}

// opCtx bounds one operation of a request.
func (c Config) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.OpTimeout)
}
