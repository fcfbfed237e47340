package kvlease

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nuid"

	"github.com/natscoord/natscoord/internal/kvx"
)

// TTL bounds. The server counts per-key TTLs in whole seconds with a
// minimum of one; a day keeps expiry finite.
const (
	MinTTL = time.Second
	MaxTTL = 24 * time.Hour
)

// Defaults of Config.
const (
	DefaultBucket      = "natscoord_leases"
	DefaultMaxActive   = 65536
	DefaultMaxKeyBytes = 512
	DefaultOpTimeout   = kvx.DefaultOpTimeout
	DefaultMaxWait     = time.Hour
)

// markerTTL is how long the server keeps the marker it writes when a lease
// expires. While it exists a waiter that saw it (watch event) acquires in
// one publish; afterwards the key has no message and Create needs none.
const markerTTL = time.Minute

// Config configures a Manager. The zero value is valid: every field states
// its default.
type Config struct {
	// Bucket is the KV bucket holding the leases. Default
	// DefaultBucket ("natscoord_leases"). It is created with History 1 and
	// per-key TTLs when missing; an existing bucket must have per-key TTLs
	// enabled (LimitMarkerTTL).
	Bucket string
	// Replicas is the bucket's replication factor when NewManager creates
	// it. Default 1; 3 for a bucket that survives a node loss.
	Replicas int
	// MaxActive bounds the guards this manager holds at once, counting
	// acquisitions in flight (so concurrent ones cannot overshoot it).
	// Default DefaultMaxActive (65536).
	MaxActive int
	// MaxKeyBytes bounds a lease key ("<family>.<encoded key>", slot
	// suffix included) in bytes. Default DefaultMaxKeyBytes (512).
	MaxKeyBytes int
	// OpTimeout bounds every single KV operation whose context has
	// no earlier deadline, and every cleanup attempt (release on Close,
	// on loss, after With). Operations whose context can never end share
	// one deadline, so each of them is bounded by at least half of it
	// and at most all of it. A caller's later deadline does not lift it.
	// Ceiling: TryAcquire, Renew, Release, Holder, Export and Restore take
	// at most 2 × OpTimeout, ForceRelease 4× (see bounds.go).
	// Default 5s.
	OpTimeout time.Duration
	// MaxWait bounds the wait argument of Acquire. Default 1h.
	MaxWait time.Duration
	// Holder is the public holder id stored in every lease value so
	// operators can see who holds what. Default "<host>:<pid>:<nuid>".
	// It is not a secret and not used for ownership checks.
	Holder string
	// Logger receives debug/warn lines about renewals and cleanup.
	// Default: discard.
	Logger *slog.Logger
	// Observer receives one call per acquisition, renewal, release and
	// loss, with its duration and error (metrics; see RecorderObserver
	// and Observers). Default: none.
	Observer Observer
}

func (c Config) withDefaults() (Config, error) {
	c.Bucket = cmp.Or(c.Bucket, DefaultBucket)
	r, rerr := kvx.CheckReplicas(c.Replicas)
	if rerr == nil {
		c.Replicas = r
	}
	c.MaxActive = cmp.Or(c.MaxActive, DefaultMaxActive)
	c.MaxKeyBytes = cmp.Or(c.MaxKeyBytes, DefaultMaxKeyBytes)
	c.OpTimeout = cmp.Or(c.OpTimeout, DefaultOpTimeout)
	c.MaxWait = cmp.Or(c.MaxWait, DefaultMaxWait)
	if c.Holder == "" {
		c.Holder = fmt.Sprintf("%s:%d:%s", hostname(), os.Getpid(), nuid.Next())
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case !validName(c.Bucket):
		return c, fmt.Errorf("%w: Bucket %q must be one token of [A-Za-z0-9_-]", ErrInvalidConfig, c.Bucket)
	case rerr != nil:
		return c, fmt.Errorf("%w: %w", ErrInvalidConfig, rerr)
	case c.MaxActive < 0:
		return c, fmt.Errorf("%w: MaxActive %d is negative", ErrInvalidConfig, c.MaxActive)
	case c.MaxKeyBytes < 16 || c.MaxKeyBytes > 4096:
		return c, fmt.Errorf("%w: MaxKeyBytes %d outside 16..4096", ErrInvalidConfig, c.MaxKeyBytes)
	case c.OpTimeout < 10*time.Millisecond:
		return c, fmt.Errorf("%w: OpTimeout %v below 10ms", ErrInvalidConfig, c.OpTimeout)
	case c.MaxWait < 0:
		return c, fmt.Errorf("%w: MaxWait %v is negative", ErrInvalidConfig, c.MaxWait)
	case len(c.Holder) > 256:
		return c, fmt.Errorf("%w: Holder is %d bytes, above 256", ErrInvalidConfig, len(c.Holder))
	}
	return c, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
}

// ValidateTTL reports whether ttl is a usable lease TTL: MinTTL..MaxTTL.
// Fractions of a second are accepted: the server-side TTL is rounded UP to
// whole seconds, the holder's validity window uses ttl as given.
func ValidateTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL {
		return fmt.Errorf("%w: %v outside %v..%v", ErrInvalidTTL, ttl, MinTTL, MaxTTL)
	}
	return nil
}

// serverTTL rounds ttl up to whole seconds: the server truncates, and
// truncating would let the server expire a lease before the holder's
// window ends.
func serverTTL(ttl time.Duration) time.Duration {
	return (ttl + time.Second - 1).Truncate(time.Second)
}

// Margin returns the safety margin of a lease with ttl: the holder's
// validity window is (time its last confirmed write was sent) + ttl -
// Margin(ttl). It is max(50ms, ttl/10).
func Margin(ttl time.Duration) time.Duration {
	return max(50*time.Millisecond, ttl/10)
}

// retryEvery is the pause between attempts of a renewal that failed with
// a transient error.
func retryEvery(ttl time.Duration) time.Duration {
	return min(max(ttl/15, 50*time.Millisecond), 2*time.Second)
}
