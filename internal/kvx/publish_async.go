package kvx

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
// The answers come to one reply subscription per Bucket (made at the
// first such write, ended with the connection: nats.go's one goroutine
// for it), and are read as send reads them (decodeAck), so a pipelined
// write costs no more than an awaited one. A write that finds no stream
// listening (its leader changing) is sent again the awaited way, with
// the same id.
func (b *Bucket) UpdateAsyncAs(key string, value []byte, rev uint64, ttl time.Duration, id string, hdr nats.Header) (wait func(context.Context) (uint64, error)) {
	if err := CheckKey(key); err != nil {
		return func(context.Context) (uint64, error) { return 0, err }
	}
	c := casCond(rev, ttl, id)
	o := newOutMsg(b.Subject(key), value, hdr)
	defer putOutMsg(o) // sent (or not) by the time this returns
	m := &o.m
	if err := b.prepare(m, c, o.vals[:0]); err != nil {
		return func(context.Context) (uint64, error) { return 0, err }
	}
	token, reply, ch, err := b.replies.expect(b.js.Conn())
	if err == nil {
		m.Reply = reply
		if err = b.js.Conn().PublishMsg(m); err != nil {
			b.replies.forget(token)
		}
	}
	if err != nil { // not sent: the awaited path
		return func(ctx context.Context) (uint64, error) { return b.UpdateAs(ctx, key, value, rev, ttl, id, hdr) }
	}
	// The wait keeps its answer: once answered, ch goes back to the pool
	// and may carry another write's answer, so a second call must not
	// receive from it again (it returns the first call's result). Calls
	// are sequential: the wait is not safe for concurrent use.
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
		select {
		case resp := <-ch:
			replyChans.Put(ch) // answered: nothing sends on it again
			if len(resp.Data) == 0 && resp.Header.Get("Status") == "503" {
				// No responders: the awaited path retries.
				res.seq, res.err = b.UpdateAs(ctx, key, value, rev, ttl, id, hdr)
				return res.seq, res.err
			}
			seq, err := decodeAck(resp.Data)
			res.seq, res.err = seq, mapErr(err)
		case <-ctx.Done():
			b.replies.forget(token)
			// Sent and not answered: it may yet land.
			res.err = fmt.Errorf("kvx: write %q: %w", key, context.Cause(ctx))
		}
		return res.seq, res.err
	}
}

// asyncReplies routes each answer to the write waiting for it, by the
// last token of its reply subject (a number in base 36).
type asyncReplies struct {
	mu      sync.Mutex
	sub     *nats.Subscription
	prefix  string // the subscription's subject without its last token
	next    uint64
	waiting map[uint64]chan *nats.Msg
}

// replyChans keeps the channels of answered writes for the next ones:
// a write's channel is put back only once its one answer was received,
// so nothing can send on it any more (deliver takes a channel out of
// waiting before it sends; a write whose wait ended unanswered keeps
// its channel out of the pool, as the answer may still come).
var replyChans = sync.Pool{New: func() any { return make(chan *nats.Msg, 1) }}

// expect returns a fresh reply token, its reply subject (built under the
// lock, since a new subscription changes the prefix) and the channel its
// answer comes on, subscribing on nc at the first call (again after the
// connection dropped the subscription).
func (r *asyncReplies) expect(nc *nats.Conn) (token uint64, reply string, ch chan *nats.Msg, err error) {
	ch = replyChans.Get().(chan *nats.Msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sub == nil || !r.sub.IsValid() {
		inbox := nc.NewInbox() + "."
		sub, err := nc.Subscribe(inbox+"*", r.deliver)
		if err != nil {
			replyChans.Put(ch)
			return 0, "", nil, err
		}
		r.sub, r.prefix, r.waiting = sub, inbox, make(map[uint64]chan *nats.Msg)
	}
	r.next++
	token = r.next
	r.waiting[token] = ch
	var buf [96]byte // the inbox prefix and the token, one string built
	return token, string(strconv.AppendUint(append(buf[:0], r.prefix...), token, 36)), ch, nil
}

func (r *asyncReplies) forget(token uint64) {
	r.mu.Lock()
	delete(r.waiting, token)
	r.mu.Unlock()
}

// deliver hands an answer to its writer; one nobody waits for any more
// (its wait ended), or whose token is not one of ours, is dropped.
func (r *asyncReplies) deliver(m *nats.Msg) {
	token, err := strconv.ParseUint(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:], 36, 64)
	if err != nil {
		return
	}
	r.mu.Lock()
	ch, ok := r.waiting[token]
	delete(r.waiting, token)
	r.mu.Unlock()
	if ok {
		ch <- m // buffered 1, one answer per token
	}
}
