package kvx

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
)

// UpdateAsyncAs is UpdateAs (hdr stored with the message as there) sent without waiting for the stream's
// acknowledgment: the compare-and-set leaves at once, and wait (called
// once, bounded by its ctx) returns what UpdateAs would have: the new
// revision, ErrConflict for a lost race, an outcome-unknown error
// (OutcomeUnknown) when no answer came within ctx. Several such writes
// can be in flight on one connection, each with its own acknowledgment,
// so a caller pipelines independent compare-and-sets instead of waiting
// one round trip each; unlike an atomic batch, one write's lost race
// refuses only that write. The fence is the same as UpdateAs's: the
// server checks rev when the message arrives.
//
// It is UpdateAs cut in two: the same post, and the same await when wait
// is called (publish_reply.go), so a pipelined write costs no more than
// an awaited one and is answered, retried and bounded the same way. A
// write that could not be sent (post failed: the connection's reconnect
// buffer full, say) is sent by wait, as UpdateAs would.
func (b *Bucket) UpdateAsyncAs(key string, value []byte, rev uint64, ttl time.Duration, id string, hdr nats.Header) (wait func(context.Context) (uint64, error)) {
	if err := CheckKey(key); err != nil {
		return func(context.Context) (uint64, error) { return 0, err }
	}
	o := newOutMsg(b.Subject(key), value, hdr)
	m := &o.m
	if err := b.prepare(m, casCond(rev, ttl, id), o.vals[:0]); err != nil {
		putOutMsg(o)
		return func(context.Context) (uint64, error) { return 0, err }
	}
	token, ch, err := b.post(m)
	// The wait keeps its answer: once answered, ch goes back to the pool
	// and may carry another write's answer, so a second call must not
	// receive from it again (it returns the first call's result). Calls
	// are sequential: the wait is not safe for concurrent use. The
	// message is kept until then, for await's resends.
	var res struct { // one heap cell: the first call's answer
		waited bool
		seq    uint64
		err    error
	}
	return func(ctx context.Context) (uint64, error) {
		if res.waited {
			return res.seq, res.err
		}
		res.waited = true
		if err != nil { // not sent: sent now
			res.seq, res.err = b.request(ctx, m)
		} else {
			res.seq, res.err = b.await(ctx, m, token, ch)
		}
		putOutMsg(o)
		return res.seq, res.err
	}
}
