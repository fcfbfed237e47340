package kvx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/retry"
)

// Config describes a bucket to create or bind.
type Config struct {
	// Bucket is the bucket name (required).
	Bucket string
	// Description is stored with the bucket.
	Description string
	// Replicas is the stream replication factor. Default 1.
	Replicas int
	// History is the number of values kept per key. Default 1, which lease
	// buckets need: with History > 1 the server raises every per-key TTL
	// to at least LimitMarkerTTL.
	History uint8
	// LimitMarkerTTL enables per-key TTLs and is how long expiry markers
	// are kept. 0 disables per-key TTLs; otherwise at least one second.
	LimitMarkerTTL time.Duration
	// Storage defaults to file storage.
	Storage jetstream.StorageType
	// MaxBytes caps the bucket's size. Default unlimited.
	MaxBytes int64
	// RequireTTL makes Open fail with ErrNoTTL when an existing bucket
	// was created without LimitMarkerTTL.
	RequireTTL bool
	// AtomicBatches makes Open allow atomic batch publishes on the
	// stream of a bucket it creates (EnableAtomicBatches). A server that
	// cannot (before nats-server 2.12) or a refused update leaves the
	// bucket without them; AtomicBatches then reports false.
	AtomicBatches bool
	// RePublish, when set, makes the server publish every stored message
	// of the bucket matching its Source to its Destination (a live feed,
	// at most once).
	RePublish *jetstream.RePublish
}

// Bucket is a bound KV bucket with the raw operations of this package.
// It is safe for concurrent use.
type Bucket struct {
	js        jetstream.JetStream
	kv        jetstream.KeyValue
	name      string
	stream    string
	prefix    string // "$KV.<bucket>."
	apiPrefix string // "$JS.API." or a domain/custom prefix
	ttl       bool   // per-key TTLs enabled
	// directIsLeader: the stream has one replica and allows direct gets,
	// so a direct get is answered by the leader (see LastFresh).
	directIsLeader bool
	// replicated: the stream has more than one replica.
	replicated bool
	// atomic: the stream was last seen to allow atomic batches (see
	// AtomicBatches); cleared when a batch is refused for want of it.
	atomic atomic.Bool
	// replies routes the answers of every write (publish_reply.go).
	replies replies
}

// Replicated reports whether the bucket's stream has more than one
// replica. Only then can a server that is no longer the leader answer a
// write (from its stale state) before the leader does.
func (b *Bucket) Replicated() bool { return b.replicated }

// Open binds cfg.Bucket, creating it with cfg when it does not exist.
// An existing bucket is used as it is (its configuration is not changed).
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Bucket, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("kvx: empty bucket name")
	}
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	created := false
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg.keyValueConfig())
		created = err == nil
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, cfg.Bucket) // lost a creation race
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kvx: bucket %q: %w", cfg.Bucket, err)
	}
	b, err := bind(ctx, js, kv, cfg.RequireTTL)
	if err == nil && created && cfg.AtomicBatches {
		// The KV API cannot create a stream that allows atomic batches:
		// one update right after the creation does. Its failure is
		// the fallback the field states, not an error of Open.
		_ = b.EnableAtomicBatches(ctx)
	}
	return b, err
}

// Bind binds an existing bucket without creating it.
func Bind(ctx context.Context, js jetstream.JetStream, bucket string, requireTTL bool) (*Bucket, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("kvx: bucket %q: %w", bucket, err)
	}
	return bind(ctx, js, kv, requireTTL)
}

func bind(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, requireTTL bool) (*Bucket, error) {
	st, err := statusWithLeader(ctx, kv)
	if err != nil {
		return nil, fmt.Errorf("kvx: bucket %q status: %w", kv.Bucket(), err)
	}
	ttl := st.LimitMarkerTTL() > 0
	direct, replicated, atomicOK := false, true, false
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo() != nil {
		c := bs.StreamInfo().Config
		direct = c.AllowDirect && c.Replicas <= 1
		replicated = c.Replicas > 1
		atomicOK = c.AllowAtomicPublish
	}
	if requireTTL && !ttl {
		return nil, fmt.Errorf("%w (bucket %q)", ErrNoTTL, kv.Bucket())
	}
	b := &Bucket{
		js:        js,
		kv:        kv,
		name:      kv.Bucket(),
		stream:    "KV_" + kv.Bucket(),
		prefix:    "$KV." + kv.Bucket() + ".",
		apiPrefix: apiPrefix(js.Options()),
		ttl:       ttl,

		directIsLeader: direct,
		replicated:     replicated,
	}
	b.atomic.Store(atomicOK) // known from the status just read: no stream-info round trip later
	return b, nil
}

func (c Config) keyValueConfig() jetstream.KeyValueConfig {
	h := c.History
	if h == 0 {
		h = 1
	}
	r := c.Replicas
	if r == 0 {
		r = 1
	}
	return jetstream.KeyValueConfig{
		Bucket:         c.Bucket,
		Description:    c.Description,
		History:        h,
		Replicas:       r,
		Storage:        c.Storage,
		MaxBytes:       c.MaxBytes,
		LimitMarkerTTL: c.LimitMarkerTTL,
		RePublish:      c.RePublish,
	}
}

func apiPrefix(o jetstream.JetStreamOptions) string {
	if o.Domain != "" {
		return "$JS." + o.Domain + ".API."
	}
	p := o.APIPrefix
	if p == "" {
		p = jetstream.DefaultAPIPrefix
	}
	if !strings.HasSuffix(p, ".") {
		p += "."
	}
	return p
}

// Name returns the bucket name.
func (b *Bucket) Name() string { return b.name }

// Stream returns the name of the stream behind the bucket.
func (b *Bucket) Stream() string { return b.stream }

// Subject returns the stream subject of key.
func (b *Bucket) Subject(key string) string { return b.prefix + key }

// JetStream returns the JetStream handle the bucket was opened with.
func (b *Bucket) JetStream() jetstream.JetStream { return b.js }

// TTLEnabled reports whether the bucket accepts per-key TTLs.
func (b *Bucket) TTLEnabled() bool { return b.ttl }

// statusWithLeader returns the bucket's status once its stream has a
// leader. A replicated bucket that was just created (or whose nodes just
// restarted) has none for a moment, and writes meanwhile fail with "no
// response from stream"; callers that open a bucket expect to use it at
// once. This is a bounded wait at open time (ctx bounds it), never on a
// hot path.
//
// It asks again every 20 ms (leaderPoll) until ctx ends, and for at most
// leaderWait when ctx has no deadline.
func statusWithLeader(ctx context.Context, kv jetstream.KeyValue) (jetstream.KeyValueStatus, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, leaderWait)
		defer cancel()
	}
	l := leaderPoll.Start(ctx)
	for l.Next() {
		st, err := kv.Status(ctx)
		if err != nil {
			return nil, err
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok {
			return st, nil
		}
		info := bs.StreamInfo()
		if info == nil || info.Cluster == nil || info.Config.Replicas <= 1 || info.Cluster.Leader != "" {
			return st, nil
		}
	}
	return nil, fmt.Errorf("no stream leader: %w", l.Err())
}

// leaderPoll and leaderWait are statusWithLeader's pauses and its ceiling
// under a ctx without a deadline (a stream leader is elected within a few
// seconds; the wait is only at open time).
var leaderPoll = retry.Policy{Pause: 20 * time.Millisecond, MaxPause: 20 * time.Millisecond}

const leaderWait = 30 * time.Second
