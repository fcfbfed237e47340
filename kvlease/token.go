package kvlease

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/natscoord/natscoord/internal/kvx"
)

// Token is a transferable handle to one held lease of a family with key
// type K, made by Export and consumed by Restore. It carries the lease's
// owner secret, so it is a credential: String, GoString, every fmt verb,
// slog (LogValue) and encoding/json (MarshalJSON) show it with the secret
// redacted; only MarshalText reveals it.
type Token[K any] struct {
	family Name
	key    string
	fence  uint64
	ttl    time.Duration
	secret secret
}

const (
	tokenPrefix = "kvlease1:"
	maxTokenLen = 8192
)

type tokenWire struct {
	Family string `json:"f"`
	Key    string `json:"k"`
	Fence  uint64 `json:"r"`
	TTL    int64  `json:"t"` // milliseconds
	Secret string `json:"s"` // hex
}

// IsZero reports whether t is the zero token.
func (t Token[K]) IsZero() bool { return t.key == "" }

// Family returns the token's family name.
func (t Token[K]) Family() Name { return t.family }

// LeaseKey returns the lease key the token transfers.
func (t Token[K]) LeaseKey() string { return t.key }

// Fence returns the revision the lease was at when exported.
func (t Token[K]) Fence() uint64 { return t.fence }

// TTL returns the lease's TTL; Restore renews with it.
func (t Token[K]) TTL() time.Duration { return t.ttl }

// String describes the token without its secret.
func (t Token[K]) String() string {
	if t.IsZero() {
		return "kvlease.Token{}"
	}
	return fmt.Sprintf("kvlease.Token{family: %s, key: %s, fence: %d, ttl: %v, secret: REDACTED}", t.family, t.key, t.fence, t.ttl)
}

// GoString is String: %#v redacts too.
func (t Token[K]) GoString() string { return t.String() }

// Format makes every verb (%v, %+v, %#v, %s, %q, %x...) print String.
func (t Token[K]) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(t.String())) }

// MarshalText encodes the token, secret included, for handing it to the
// process that will Restore it.
func (t Token[K]) MarshalText() ([]byte, error) {
	if t.IsZero() {
		return nil, fmt.Errorf("%w: zero token", ErrInvalidToken)
	}
	w, err := json.Marshal(tokenWire{
		Family: string(t.family), Key: t.key, Fence: t.fence, TTL: t.ttl.Milliseconds(),
		Secret: hex.EncodeToString(t.secret[:]),
	})
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(tokenPrefix)+base64.RawURLEncoding.EncodedLen(len(w)))
	copy(out, tokenPrefix)
	base64.RawURLEncoding.Encode(out[len(tokenPrefix):], w)
	return out, nil
}

// UnmarshalText decodes and validates a token made by MarshalText. On
// error t is left unchanged.
func (t *Token[K]) UnmarshalText(text []byte) error {
	if len(text) > maxTokenLen {
		return fmt.Errorf("%w: %d bytes, above %d", ErrInvalidToken, len(text), maxTokenLen)
	}
	body, ok := bytes.CutPrefix(text, []byte(tokenPrefix))
	if !ok {
		return fmt.Errorf("%w: missing %q prefix", ErrInvalidToken, tokenPrefix)
	}
	raw := make([]byte, base64.RawURLEncoding.DecodedLen(len(body)))
	n, err := base64.RawURLEncoding.Strict().Decode(raw, body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw[:n]))
	dec.DisallowUnknownFields()
	var w tokenWire
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrInvalidToken)
	}
	nt := Token[K]{family: Name(w.Family), key: w.Key, fence: w.Fence, ttl: time.Duration(w.TTL) * time.Millisecond}
	if err := nt.family.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if !kvx.ValidKey(w.Key) || !strings.HasPrefix(w.Key, w.Family+".") {
		return fmt.Errorf("%w: key %q is not a lease key of family %q", ErrInvalidToken, w.Key, w.Family)
	}
	if w.Fence == 0 {
		return fmt.Errorf("%w: zero fence", ErrInvalidToken)
	}
	if w.TTL < MinTTL.Milliseconds() || w.TTL > MaxTTL.Milliseconds() { // before multiplying: no overflow
		return fmt.Errorf("%w: TTL %dms outside %v..%v", ErrInvalidToken, w.TTL, MinTTL, MaxTTL)
	}
	s, err := hex.DecodeString(w.Secret)
	if err != nil || len(s) != secretBytes || strings.ToLower(w.Secret) != w.Secret {
		return fmt.Errorf("%w: malformed secret", ErrInvalidToken)
	}
	copy(nt.secret[:], s)
	*t = nt
	return nil
}

// Export hands g's ownership to a token: g stops renewing and ends with
// ErrExported, but its lease is NOT released. Whoever Restores the token
// (in this or another process, before the lease's TTL runs out) becomes
// the holder and is responsible for releasing it. g must be a live guard
// of this family.
func (l Leases[K]) Export(g *Guard) (Token[K], error) {
	if l.m == nil || g == nil || g.m != l.m || g.family != l.d.name {
		return Token[K]{}, ErrForeignGuard
	}
	g.opMu.Lock() // no renewal or guarded write in flight
	defer g.opMu.Unlock()
	if err := g.Err(); err != nil {
		return Token[K]{}, err
	}
	g.mu.Lock()
	rev := g.rev
	g.mu.Unlock()
	if !g.end(ErrExported, false, false) {
		return Token[K]{}, g.ended()
	}
	l.m.stats.exported.Add(1)
	return Token[K]{family: g.family, key: g.key, fence: rev, ttl: g.ttl, secret: g.secret}, nil
}

// Restore takes over the lease a token transfers. It reads the key from
// the stream leader, checks the token's secret against the stored owner
// hash, and then, in one compare-and-set on the current revision, writes a
// fresh owner (a new secret, so the token is used up) with a fresh TTL.
// Restoring the same token twice, or a token whose lease expired, was
// released or was force-released, returns ErrLost. The returned guard is
// like one from TryAcquire (no automatic renewal) and its Fence is the
// restore revision. ctx is its parent context.
func (l Leases[K]) Restore(ctx context.Context, t Token[K]) (*Guard, error) {
	if l.m == nil {
		return nil, fmt.Errorf("%w: zero Leases (use Declaration.Bind)", ErrInvalidConfig)
	}
	if t.IsZero() || t.family != l.d.name {
		return nil, fmt.Errorf("%w: token of family %q restored into %q", ErrInvalidToken, t.family, l.d.name)
	}
	m := l.m
	if err := m.begin(); err != nil {
		return nil, err
	}
	defer m.acquiring.Done()
	if err := m.admit(); err != nil {
		return nil, err
	}
	g, err := l.restore(ctx, t)
	if g == nil {
		m.unadmit()
	}
	return g, err
}

func (l Leases[K]) restore(ctx context.Context, t Token[K]) (*Guard, error) {
	m := l.m
	octx, cancel := m.opCtx(ctx)
	defer cancel()
	e, err := m.b.Get(octx, t.key)
	if errors.Is(err, kvx.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q is no longer held", ErrLost, t.key)
	}
	if err != nil {
		return nil, fmt.Errorf("kvlease: restore %q: %w", t.key, err)
	}
	if !ownedBy(e.Value, t.secret.hash()) {
		return nil, fmt.Errorf("%w: %q has another owner (token used up or lease replaced)", ErrLost, t.key)
	}
	sec := newSecret()
	owner := sec.hash()
	value := m.encodeValue(m.now(), t.ttl, owner, "") // a token does not carry the Info
	rev, sent, err := l.restoreWrite(octx, t, e, owner, value)
	if err != nil {
		return nil, err
	}
	g := m.newGuard(ctx, l.d.name, t.key, rev, sent, t.ttl, sec, owner, value)
	if !g.start(ctx) {
		g.abort()
		return nil, ErrClosed
	}
	m.stats.restored.Add(1)
	return g, nil
}

// restoreWrite writes the restored lease's value over e, the token's
// lease as read, and returns the revision and send time of the write
// that holds it. A conflict is loss only if the key really changed: on
// an R3 bucket under leader changes a CAS can be refused while the
// leader still holds the expected value, and a refused write can have
// landed. So the write goes through casOwned with the token's owner as
// precondition (written again while it is still stored), and a conflict
// that ends with our new owner stored means the write landed; anything
// else is ErrLost.
func (l Leases[K]) restoreWrite(ctx context.Context, t Token[K], e kvx.Entry, owner string, value []byte) (uint64, time.Time, error) {
	m := l.m
	// A write found stored after an ambiguous answer may be any attempt's
	// (they carry the same value): its validity counts from the first.
	first := m.now()
	var sent time.Time
	rev, _, seen, err := m.casOwned(ctx, t.key, t.secret.hash(), e.Revision, func(ctx context.Context, rev uint64) (uint64, error) {
		sent = m.now()
		return m.b.Update(ctx, t.key, value, rev, serverTTL(t.ttl))
	}, func(uint64, int) {})
	switch {
	case err == nil:
		return rev, sent, nil
	case kvx.IsConflict(err) && ownedBy(seen.Value, owner):
		return seen.Revision, first, nil // refused, yet stored
	case kvx.IsConflict(err):
		return 0, sent, fmt.Errorf("%w: %q changed during restore", ErrLost, t.key)
	case kvx.OutcomeUnknown(err):
		if cur, ok := m.reread(t.key); ok && ownedBy(cur.Value, owner) {
			return cur.Revision, first, nil // the unanswered write landed
		}
	}
	return 0, sent, fmt.Errorf("kvlease: restore %q: %w", t.key, closedErr(err))
}
