package kvx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// cond is what a single write asks of the stream besides storing its
// message: the headers that nats.go's publish options would set, set
// here directly (see send).
type cond struct {
	expect bool   // compare the last sequence of a subject
	rev    uint64 // the sequence expected (0: the subject has no message)
	// subj is the subject whose last sequence is compared ("": the
	// message's own).
	subj string
	ttl  time.Duration // Nats-TTL when > 0
	id   string        // Nats-Msg-Id when set
}

// casCond is the condition of a write on key's own revision rev, with a
// TTL when ttl > 0 and a Nats-Msg-Id when id is set.
func casCond(rev uint64, ttl time.Duration, id string) cond {
	return cond{expect: true, rev: rev, ttl: ttl, id: id}
}

// send publishes m with c's headers and waits for the stream's
// acknowledgment, returning the stored message's sequence; errors are
// mapped (mapErr).
//
// It does what jetstream.PublishMsg does (same headers, same bound when
// ctx has no deadline, the "no responders" retries of
// WithRetryAttempts(10) as the policy noResponders, the same errors),
// without its costs on the hot path of every lease: nats.go applies
// options through closures into a struct and decodes every
// acknowledgment with encoding/json, several percent of a local lock
// cycle (BENCHMARKS.md has the figures).
// The acknowledgment of a stored message is read by readAck; every other
// answer goes through the same decoding nats.go does.
func (b *Bucket) send(ctx context.Context, m *nats.Msg, c cond) (uint64, error) {
	return b.sendVals(ctx, m, c, nil)
}

// sendVals is send with vals (nil: one is made) as the backing array of
// c's header values.
func (b *Bucket) sendVals(ctx context.Context, m *nats.Msg, c cond, vals []string) (uint64, error) {
	if err := b.prepare(m, c, vals); err != nil {
		return 0, err
	}
	return b.request(ctx, m)
}

// prepare checks m's size and sets c's headers on it: what every write
// does before its publish, awaited (send) or not (UpdateAsyncAs). vals,
// when not nil, is the backing array of the header values (an outMsg's).
func (b *Bucket) prepare(m *nats.Msg, c cond, vals []string) error {
	if err := b.checkSize(m); err != nil {
		return err
	}
	if c.expect || c.ttl > 0 || c.id != "" {
		if m.Header == nil {
			m.Header = make(nats.Header, 4)
		}
		// One backing array for the header values, one value each.
		if vals == nil {
			vals = make([]string, 0, 4)
		}
		vals = vals[:0]
		set := func(k, v string) {
			vals = append(vals, v)
			m.Header[k] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
		if c.id != "" {
			set(jetstream.MsgIDHeader, c.id)
		}
		if c.expect {
			set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(c.rev, 10))
			if c.subj != "" {
				set(jetstream.ExpectedLastSubjSeqSubjHeader, c.subj)
			}
		}
		if c.ttl > 0 {
			set(jetstream.MsgTTLHeader, c.ttl.String())
		}
	}
	return nil
}

// outMsg is the message of one compare-and-set (UpdateAs,
// UpdateAsyncAs) with room for its header values, reused from outMsgs:
// nats.go encodes a message's subject, headers and data into the
// connection's buffer before its publish or request returns, and keeps
// no reference to it, so once sent it serves the next write. Two writes
// of the runtime per task each made a message, a header map and a slice
// of header values.
type outMsg struct {
	m    nats.Msg
	vals [4]string
}

var outMsgs = sync.Pool{New: func() any { return &outMsg{m: nats.Msg{Header: make(nats.Header, 8)}} }}

// newOutMsg returns a pooled message to subject with data and a copy of
// hdr's headers (send adds its own to the message's map, which must not
// be the caller's); putOutMsg gives it back once it was sent.
func newOutMsg(subject string, data []byte, hdr nats.Header) *outMsg {
	o := outMsgs.Get().(*outMsg)
	o.m.Subject, o.m.Data = subject, data
	for k, v := range hdr {
		o.m.Header[k] = v
	}
	return o
}

func putOutMsg(o *outMsg) {
	clear(o.m.Header)
	o.m.Subject, o.m.Reply, o.m.Data = "", "", nil
	o.vals = [4]string{}
	outMsgs.Put(o)
}

// request is jetstream.PublishMsg's round trip on the bucket's reply
// subscription: m posted, and its answer awaited (await: the "no
// responders" resends, the bound, the acknowledgment read). An awaited
// write is a pipelined one (UpdateAsyncAs) whose wait follows at once.
func (b *Bucket) request(ctx context.Context, m *nats.Msg) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err // not sent
	}
	token, ch, err := b.post(m)
	if err != nil {
		return 0, err
	}
	return b.await(ctx, m, token, ch)
}

// decodeAck reads the stream's answer to a write: the sequence it stored
// the message at (readAck for the usual answer), or the error it sent.
func decodeAck(d []byte) (uint64, error) {
	if seq, ok := readAck(d); ok {
		return seq, nil
	}
	var ack struct {
		Error *jetstream.APIError `json:"error,omitempty"`
		*jetstream.PubAck
	}
	if err := json.Unmarshal(d, &ack); err != nil {
		return 0, jetstream.ErrInvalidJSAck
	}
	if ack.Error != nil {
		return 0, fmt.Errorf("nats: %w", ack.Error)
	}
	if ack.PubAck == nil || ack.Stream == "" {
		return 0, jetstream.ErrInvalidJSAck
	}
	return ack.Sequence, nil
}

// readAck reads the acknowledgment nats-server sends for a message it
// stored, exactly as the server writes it: {"stream":"<name>","seq":<n>},
// with "domain":"<domain>", before "seq" when the server has a JetStream
// domain. Any other answer (an error, a duplicate, a batch or counter
// acknowledgment, an escaped character) returns false, for the full
// decoder.
func readAck(d []byte) (uint64, bool) {
	d, ok := bytes.CutPrefix(d, []byte(`{"stream":"`))
	if !ok {
		return 0, false
	}
	d, ok = skipString(d, false)
	if !ok {
		return 0, false
	}
	if rest, ok := bytes.CutPrefix(d, []byte(`,"domain":"`)); ok {
		if d, ok = skipString(rest, true); !ok {
			return 0, false
		}
	}
	d, ok = bytes.CutPrefix(d, []byte(`,"seq":`))
	if !ok || len(d) < 2 || len(d) > 21 || d[len(d)-1] != '}' || (d[0] == '0' && len(d) > 2) {
		return 0, false // (JSON has no leading zeros)
	}
	var seq uint64
	for _, c := range d[:len(d)-1] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n := seq*10 + uint64(c-'0')
		if n/10 != seq {
			return 0, false // overflow
		}
		seq = n
	}
	return seq, true
}

// skipString skips the rest of a JSON string whose opening quote has been
// read, up to and including its closing quote. It refuses escapes and
// control characters (the full decoder handles those) and, unless empty
// is set, an empty string.
func skipString(d []byte, empty bool) ([]byte, bool) {
	for i, c := range d {
		switch {
		case c == '"':
			if i == 0 && !empty {
				return nil, false
			}
			return d[i+1:], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}
