package kvx

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/internal/retry"
)

// Update writes value to key only while the key's last stored message has
// revision rev; rev 0 means the key has no message at all (never written,
// or its last marker has itself expired). A ttl > 0 gives the new value a
// per-key TTL (whole seconds on the server, at least one); 0 means none.
// It returns the new revision. A lost race returns ErrConflict.
//
// Unlike kv.Update this sets Nats-TTL, so it is how leases are renewed.
func (b *Bucket) Update(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	return b.UpdateAs(ctx, key, value, rev, ttl, "", nil)
}

// Create writes value only when key has no message at all. Prefer Acquire
// when the key may hold a delete or expiry marker.
func (b *Bucket) Create(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	return b.Update(ctx, key, value, 0, ttl)
}

// Acquire writes value when key holds no live value: it publishes
// expecting revision hint (the revision of the marker the caller last saw,
// or 0), and on a conflict reads the key from the stream leader and tries
// again at the marker's revision. So a caller with the right hint acquires
// in one round trip, and one with a stale hint in two or three.
//
// When the key holds a live value it returns ErrConflict together with
// that value's entry, so the caller can see the holder and wait for its
// revision to change.
func (b *Bucket) Acquire(ctx context.Context, key string, value []byte, ttl time.Duration, hint uint64) (uint64, Entry, error) {
	return b.AcquireAs(ctx, key, value, ttl, hint, "", nil)
}

// Delete writes a delete marker on key only while its revision is rev and
// returns the marker's revision (which a later Acquire can use as hint).
// The marker stays until something else is written to the key.
func (b *Bucket) Delete(ctx context.Context, key string, rev uint64) (uint64, error) {
	return b.DeleteTTL(ctx, key, rev, 0)
}

// DeleteTTL is Delete whose marker itself expires after ttl (> 0 needs a
// bucket with LimitMarkerTTL): the server then replaces it with an expiry
// marker, which goes after LimitMarkerTTL, and the key leaves the bucket
// entirely. Without it every distinct key ever deleted keeps one marker
// for good, which grows without bound for per-task or per-waiter keys.
func (b *Bucket) DeleteTTL(ctx context.Context, key string, rev uint64, ttl time.Duration) (uint64, error) {
	return b.DeleteAs(ctx, key, rev, ttl, "")
}

// PutGuarded writes value to key (unconditionally on key itself) only
// while guardKey's last revision is guardRev, in one publish. It is how a
// lease holder writes "only while I still hold the lease".
func (b *Bucket) PutGuarded(ctx context.Context, key string, value []byte, guardKey string, guardRev uint64) (uint64, error) {
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	if err := CheckKey(guardKey); err != nil {
		return 0, err
	}
	return b.send(ctx, &nats.Msg{Subject: b.Subject(key), Data: value},
		cond{expect: true, rev: guardRev, subj: b.Subject(guardKey)})
}

// DeleteGuarded writes a delete marker on key (unconditionally on key
// itself) only while guardKey's last revision is guardRev, in one publish.
// ttl > 0 makes the marker expire (see DeleteTTL). It removes an entry that
// belongs to another key's state, such as an index entry of a record, only
// while that record is still the one that made it obsolete. An expiring
// marker also rolls the key up (expiringMarker).
func (b *Bucket) DeleteGuarded(ctx context.Context, key, guardKey string, guardRev uint64, ttl time.Duration) (uint64, error) {
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	if err := CheckKey(guardKey); err != nil {
		return 0, err
	}
	m := &nats.Msg{Subject: b.Subject(key), Header: nats.Header{hdrOperation: []string{opDel}}}
	expiringMarker(m.Header, ttl)
	return b.send(ctx, m, cond{expect: true, rev: guardRev, subj: b.Subject(guardKey), ttl: ttl})
}

// noResponders is how a write answered "no responders" is sent again:
// 10 more times, 250 ms apart (jetstream.DefaultPubRetryWait), so for
// about 2.5 s instead of nats.go's 0.5 s (ceiling: noResponders.Ceiling()
// plus the requests, all within the write's ctx). Such a publish reached
// no stream, so sending it again cannot duplicate a write; it happens for
// a moment after a replicated stream is created (its subjects' interest
// is still propagating through the cluster) or while it changes leader,
// and surfaced as ErrNoStreamResponse on a fresh R3 bucket under load
// (TestCASCluster).
var noResponders = retry.Policy{
	Tries: 11, Pause: jetstream.DefaultPubRetryWait, MaxPause: jetstream.DefaultPubRetryWait,
	Transient: func(err error) bool { return errors.Is(err, nats.ErrNoResponders) },
}

// resend runs try (try n, from 0: the first at once, each later one after
// its pause) on the noResponders policy within ctx while it answers "no
// responders" (nats.ErrNoResponders), and returns its first other result.
// When every try reached no stream, nothing was stored, whether the tries
// ran out or ctx ended during a pause: that is ErrNoStreamResponse, a
// known failure (ctx's error is not joined: not an outcome unknown). The
// one resend loop of the writes: await's and CreateBatchAs's.
func resend(ctx context.Context, try func(n int) error) error {
	for l := noResponders.Start(ctx); l.Next(); {
		if err := try(l.Try()); !errors.Is(err, nats.ErrNoResponders) {
			return err
		}
	}
	return jetstream.ErrNoStreamResponse
}

// SpuriousConflict is the pause schedule of every layer that writes again
// after a spurious conflict: a CAS refused while the stream leader reads
// the key at exactly the expected revision. It is seen under leader
// changes on R3, and on a loaded R3 stream for a write sent right after
// the key's previous one was acknowledged (nats-server 2.15 acknowledges
// a write before it clears the key's in-process mark, and refuses a CAS
// on a key so marked with 10164). 10 ms, doubling. Each user states its
// own Tries (AcquireAs 4, kvlease's owned writes 4; its release settling
// none, bounded by its ctx) and, where the loop is longer, its MaxPause.
var SpuriousConflict = retry.Policy{Pause: 10 * time.Millisecond, MaxPause: 40 * time.Millisecond}
