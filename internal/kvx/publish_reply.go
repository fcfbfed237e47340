package kvx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// ErrClosed means the Bucket was closed (Close) before a write was sent:
// it was refused, nothing was sent, so nothing was stored (a known
// failure, not an outcome unknown). Owners map it to their own closed
// error (kvlease.ErrClosed, kvlock.ErrClosed, tasks.ErrClosed).
var ErrClosed = errors.New("kvx: bucket closed")

// ErrClosedUnanswered means the Bucket was closed while a write it had
// sent waited for its answer: the write may yet land (OutcomeUnknown).
// It wraps ErrClosed, so errors.Is(err, ErrClosed) holds for both.
var ErrClosedUnanswered = fmt.Errorf("%w before the write's answer came", ErrClosed)

// AsClosed names a write that a closed Bucket refused or left unanswered
// (ErrClosed) as its owner's closed error, keeping ErrClosed's chain (which
// tells the two apart: OutcomeUnknown): an owner's caller matches the
// owner's sentinel, never kvx's. Any other error comes back as it is.
func AsClosed(err, closed error) error {
	if errors.Is(err, ErrClosed) && !errors.Is(err, closed) {
		return fmt.Errorf("%w: %w", closed, err)
	}
	return err
}

// Close ends the bucket's reply subscription, the one every write of the
// bucket is answered on (replies): its owner (a lease manager, a locker,
// a ledger store) calls it once it writes no more. The subscription is
// drained (nats.go's Subscription.Drain), so an answer the server sent
// before the close reached it is still delivered, and a write still
// waiting after that fails with ErrClosedUnanswered. Close returns once
// the subscription has ended (one round trip to the server), bounded by
// the bucket's op timeout, after which it is unsubscribed at once: when
// Close returns the subscription is gone and its goroutine ending.
// Later writes are refused with ErrClosed; reads and watches are not
// affected. It is idempotent.
func (b *Bucket) Close() { b.replies.close(OpTimeoutOf(b.js)) }

// post publishes m, its headers already set (prepare), with a reply
// subject of the bucket's reply subscription: the first half of every
// write. await is the second. A write that pipelines (UpdateAsyncAs)
// returns between the two; an awaited one (request) does not.
func (b *Bucket) post(m *nats.Msg) (token uint64, ch chan *nats.Msg, err error) {
	nc := b.js.Conn()
	token, reply, ch, err := b.replies.expect(nc)
	if err != nil {
		return 0, nil, err
	}
	m.Reply = reply
	if err := nc.PublishMsg(m); err != nil {
		b.replies.forget(token)
		return 0, nil, err
	}
	return token, ch, nil
}

// await waits, within ctx (for at most the handle's DefaultTimeout when
// ctx has no deadline, as nats.go's publish would), for the answer to m
// posted under token, and reads it (decodeAck, mapErr). An answer of "no
// responders" (no stream listens on the subject yet, or it changes
// leader) sends m again, with the same headers and so the same
// Nats-Msg-Id, on the one resend loop (resend): it reached no
// stream, so sending it again cannot duplicate it. No answer within ctx
// is ctx's error: the write may yet land (OutcomeUnknown).
func (b *Bucket) await(ctx context.Context, m *nats.Msg, token uint64, ch chan *nats.Msg) (uint64, error) {
	ctx, cancel := b.bound(ctx)
	defer cancel()
	var seq uint64
	err := resend(ctx, func(n int) error {
		if n > 0 { // the first send was post's, before await
			var err error
			if token, ch, err = b.post(m); err != nil {
				return mapErr(err)
			}
		}
		resp, err := b.answer(ctx, token, ch)
		if err != nil {
			return err
		}
		seq, err = decodeAck(resp.Data)
		return mapErr(err)
	})
	return seq, err
}

// bound is ctx bounded by the handle's DefaultTimeout when it has no
// deadline (as nats.go's publish bounds it).
func (b *Bucket) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, b.js.Options().DefaultTimeout)
}

// answer waits, within ctx, for the answer to the message posted under
// token: the message, nats.ErrNoResponders for an answer that no stream
// listens, ctx's error when none came (the write may yet land), or the
// error of the subscription's end (endErr).
func (b *Bucket) answer(ctx context.Context, token uint64, ch chan *nats.Msg) (*nats.Msg, error) {
	var resp *nats.Msg
	select {
	case resp = <-ch:
		replyChans.Put(ch) // answered: nothing sends on it again
	case <-ctx.Done():
		b.replies.forget(token) // its channel stays out of the pool: the answer may yet come
		return nil, ctxErr(ctx)
	}
	switch {
	case resp == nil: // the subscription ended (replies.ended)
		return nil, b.replies.endErr(b.js.Conn())
	case len(resp.Data) == 0 && resp.Header.Get("Status") == "503":
		return nil, nats.ErrNoResponders
	}
	return resp, nil
}

// ctxErr is the error of a write whose answer did not come within ctx:
// ctx's error (which OutcomeUnknown knows), with its cause when one was
// given.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if c := context.Cause(ctx); c != nil && c != err {
		return fmt.Errorf("%w: %w", err, c)
	}
	return err
}

// replies routes each answer to the write waiting for it, by the last
// token of its reply subject (a number in base 36). It is one
// subscription per Bucket, made at its first write and ended by
// Bucket.Close or its connection's end (nats.go keeps a subscription
// across reconnects: nothing else ends it), and it answers every
// write of the bucket: awaited, pipelined, and the commit of an atomic
// batch. nats.go's request path, which the awaited writes used before,
// makes a channel, a random token and an entry in a map under the
// connection's lock per request: the runtime's claim paid them on every
// task.
type replies struct {
	mu  sync.Mutex
	sub *nats.Subscription
	// drained is closed by sub's closed handler, once the writes waiting
	// on it were told (close waits for it).
	drained chan struct{}
	closed  bool
	prefix  string // the subscription's subject without its last token
	next    uint64
	waiting map[uint64]chan *nats.Msg
}

// replyChans keeps the channels of answered writes for the next ones:
// a write's channel is put back only once its one answer was received,
// so nothing can send on it any more (deliver and ended take a channel
// out of waiting before they send; a write whose wait ended unanswered
// keeps its channel out of the pool, as the answer may still come).
var replyChans = sync.Pool{New: func() any { return make(chan *nats.Msg, 1) }}

// expect returns a fresh reply token, its reply subject (built under the
// lock, as the first call sets the prefix) and the channel its answer
// comes on, subscribing on nc at the first call. Once the subscription
// has ended with its connection (closed, or drained), a write is refused
// with the connection's error: a closed connection takes no new one.
func (r *replies) expect(nc *nats.Conn) (token uint64, reply string, ch chan *nats.Msg, err error) {
	ch = replyChans.Get().(chan *nats.Msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		err = ErrClosed
	case r.sub == nil:
		err = r.subscribe(nc)
	case !r.sub.IsValid():
		err = gone(nc)
	}
	if err != nil {
		replyChans.Put(ch)
		return 0, "", nil, err
	}
	r.next++
	token = r.next
	r.waiting[token] = ch
	var buf [96]byte // the inbox prefix and the token, one string built
	return token, string(strconv.AppendUint(append(buf[:0], r.prefix...), token, 36)), ch, nil
}

// subscribe makes the reply subscription on nc (r.mu held).
func (r *replies) subscribe(nc *nats.Conn) error {
	inbox := nc.NewInbox() + "."
	sub, err := nc.Subscribe(inbox+"*", r.deliver)
	if err != nil {
		return err
	}
	return r.install(nc, sub, inbox)
}

// install makes sub, on inbox, the subscription writes are answered on
// (r.mu held). When it ends (Close, or its connection's end), the writes
// still waiting on it learn so at once (ended), as nats.go's request path
// tells its requests, rather than at their deadline. nats.go runs the
// handler as the subscription's goroutine ends, so one that ended before
// the handler was set (its connection closed in between) runs none:
// install refuses it, and no write waits on it.
func (r *replies) install(nc *nats.Conn, sub *nats.Subscription, inbox string) error {
	waiting := make(map[uint64]chan *nats.Msg)
	done := make(chan struct{})
	sub.SetClosedHandler(func(string) { r.ended(waiting); close(done) })
	if !sub.IsValid() {
		return gone(nc)
	}
	r.sub, r.prefix, r.waiting, r.drained = sub, inbox, waiting, done
	return nil
}

// gone is the error of a write refused because the subscription ended
// with its connection: the connection's error (nats.ErrBadSubscription
// if it has none).
func gone(nc *nats.Conn) error {
	return cmp.Or(connErr(nc), nats.ErrBadSubscription)
}

// connErr is the error of a connection that closed or drains, nil for
// one that is usable.
func connErr(nc *nats.Conn) error {
	switch {
	case nc.IsClosed():
		return nats.ErrConnectionClosed
	case nc.IsDraining():
		return nats.ErrConnectionDraining
	}
	return nil
}

// refused is ErrClosed once the Bucket is closed, nil before: a write
// of several messages (sendBatch) asks before its first, as only its
// last goes through post.
func (r *replies) refused() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	return nil
}

func (r *replies) forget(token uint64) {
	r.mu.Lock()
	delete(r.waiting, token)
	r.mu.Unlock()
}

// deliver hands an answer to its writer; one nobody waits for any more
// (its wait ended), or whose token is not one of ours, is dropped.
func (r *replies) deliver(m *nats.Msg) {
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

// ended tells every write still waiting on an ended subscription (its
// map, waiting) that no answer will come: a nil answer (await).
func (r *replies) ended(waiting map[uint64]chan *nats.Msg) {
	r.mu.Lock()
	chs := make([]chan *nats.Msg, 0, len(waiting))
	for token, ch := range waiting {
		chs = append(chs, ch)
		delete(waiting, token)
	}
	r.mu.Unlock()
	for _, ch := range chs {
		ch <- nil
	}
}

// endErr is the error of a write whose subscription ended before its
// answer came: the connection closed or drains, or the Bucket closed.
// Each is an outcome unknown (OutcomeUnknown).
func (r *replies) endErr(nc *nats.Conn) error {
	return cmp.Or(connErr(nc), ErrClosedUnanswered)
}

// close drains the subscription (answers already on their way are
// delivered; then its goroutine ends, and its closed handler runs) and
// waits for that for at most bound, then unsubscribes: a Close that
// returned with the subscription still draining left it counted on the
// connection and its goroutine running after its owner's Close.
func (r *replies) close(bound time.Duration) {
	r.mu.Lock()
	sub, done := r.sub, r.drained
	r.closed, r.sub = true, nil
	r.mu.Unlock()
	if sub == nil {
		return
	}
	if err := sub.Drain(); err == nil {
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
	_ = sub.Unsubscribe() // a drain refused or not done in time; an error here means it has ended
}
