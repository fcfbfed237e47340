package kvx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DeleteAs is DeleteTTL whose marker carries id as its Nats-Msg-Id ("" for
// none). The id makes the delete identifiable afterwards, which an owner
// needs when the answer it got cannot be trusted:
//   - the stored marker shows the id (Entry.MsgID), so a read that finds
//     it proves this very delete landed, whatever answer came back;
//   - sending the same delete again within the stream's duplicate window
//     is answered, by a replicated stream's leader, with the original
//     acknowledgment (the duplicate check comes before the revision
//     check), and never stores a second marker.
//
// Both matter under partitions: a deposed stream leader that has not yet
// learned it was replaced still answers publishes from its stale state,
// refusing a conditional delete at once ("wrong last sequence") while the
// real leader stores it, and the first answer is the one the caller sees.
func (b *Bucket) DeleteAs(ctx context.Context, key string, rev uint64, ttl time.Duration, id string) (uint64, error) {
	return b.DeleteWith(ctx, key, rev, ttl, id, nil)
}

// DeleteWith is DeleteAs whose marker also carries the headers hdr (the
// ledger names its transition in one; kvledger/doc.go "Events"). An
// expiring marker also rolls the key up (expiringMarker).
func (b *Bucket) DeleteWith(ctx context.Context, key string, rev uint64, ttl time.Duration, id string, hdr nats.Header) (uint64, error) {
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	h := withHeaders(hdr, 6)
	h[hdrOperation] = []string{opDel}
	expiringMarker(h, ttl)
	m := &nats.Msg{Subject: b.Subject(key), Header: h}
	return b.send(ctx, m, casCond(rev, ttl, id))
}

// expiringMarker makes a delete marker that expires (ttl > 0) roll its key
// up: on a bucket that keeps a key's history (History > 1) the server
// removes only the expired marker, and the key would read as its value
// before the delete again (kvledger's server facts test shows it for an
// expiring value). Rolled up, the marker is the key's only message and
// its expiry leaves the key empty.
func expiringMarker(h nats.Header, ttl time.Duration) {
	if ttl > 0 {
		h[jetstream.MsgRollup] = []string{jetstream.MsgRollupSubject}
	}
}

// withHeaders returns a copy of hdr with room for n more headers: send
// adds its own to the message's map, which must not be the caller's.
func withHeaders(hdr nats.Header, n int) nats.Header {
	h := make(nats.Header, len(hdr)+n)
	for k, v := range hdr {
		h[k] = v
	}
	return h
}

// UpdateAs is Update whose message carries id as its Nats-Msg-Id ("" for
// none): a write whose answer was lost or untrustworthy is then settled by
// finding id on the key (Entry.MsgID), never by comparing bytes, which two
// writes of the same value share. See DeleteAs for the duplicate window.
//
// hdr, when not nil, is stored with the message too (the ledger names its
// transition in a header; kvledger/doc.go "Events").
func (b *Bucket) UpdateAs(ctx context.Context, key string, value []byte, rev uint64, ttl time.Duration, id string, hdr nats.Header) (uint64, error) {
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	o := newOutMsg(b.Subject(key), value, hdr)
	defer putOutMsg(o)
	return b.sendVals(ctx, &o.m, casCond(rev, ttl, id), o.vals[:0])
}

// AcquireAs is Acquire whose every publish carries id as its Nats-Msg-Id.
// One id for all its attempts: when an attempt was refused by a stale
// answer although it landed, the next attempt gets the original
// acknowledgment back (on a replicated stream) instead of a second write.
// hdr is stored with the message as for UpdateAs.
func (b *Bucket) AcquireAs(ctx context.Context, key string, value []byte, ttl time.Duration, hint uint64, id string, hdr nats.Header) (uint64, Entry, error) {
	expect := hint
	p := SpuriousConflict
	p.Tries = 4 // 4 writes, pauses of 10, 20 and 40 ms at most
	l := p.Start(ctx)
	for l.Next() {
		rev, err := b.UpdateAs(ctx, key, value, expect, ttl, id, hdr)
		if err == nil || !IsConflict(err) {
			return rev, Entry{}, err
		}
		cur, err := b.Last(ctx, key)
		next := cur.Revision
		switch {
		case errors.Is(err, ErrNotFound):
			next = 0
		case err != nil:
			return 0, Entry{}, err
		case cur.Live() && id != "" && cur.MsgID == id:
			return cur.Revision, Entry{}, nil // ours: the refusal was stale
		case cur.Live():
			return 0, cur, fmt.Errorf("%w: %q is held at revision %d", ErrConflict, key, cur.Revision)
		}
		if next == expect {
			// Refused although the leader reads the key at exactly the
			// revision we expected: under stream-leader changes the
			// server's view can lag for a moment (seen in the R3 chaos
			// soak). Not contention: back off briefly and write again.
			// Refused so to the end, with nobody else's write in sight,
			// the answers come from a server that is not the cluster
			// (seen in the partition soak: a client of a leader cut off
			// in a minority was told "held" for seconds while the
			// majority had the key free): unsettled, not contention.
			if l.Last() {
				return 0, Entry{}, fmt.Errorf("%w: %q at revision %d", ErrUnsettled, key, expect)
			}
		} else {
			l.NoPause() // a race lost: write again at once at the new revision
		}
		expect = next
	}
	if err := l.Err(); err != nil {
		return 0, Entry{}, err // ctx ended during a pause
	}
	// Four lost races in a row: someone else keeps winning; that is
	// contention, not an error of ours.
	return 0, Entry{}, fmt.Errorf("%w: %q is contended", ErrConflict, key)
}
