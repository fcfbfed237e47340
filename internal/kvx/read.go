package kvx

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

type msgGetRequest struct {
	LastBySubject string `json:"last_by_subj"`
}

type msgGetResponse struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// Last returns key's last stored message, marker or value, read from the
// stream leader (not a direct get), so a read after an acknowledged write
// sees that write even on a replicated bucket. A key with no message at
// all returns ErrNotFound.
//
// Last does not take LastFresh's direct get even on a one-replica bucket:
// that shortcut rests on what the stream looked like when the bucket was
// bound and on nobody else serving its direct gets, and neither holds for
// good. An operator may raise the replicas of a running bucket (its new
// followers then answer direct gets, possibly behind), and a mirror
// created with MirrorDirect (as nats.go makes KV mirrors) joins the
// origin's direct-get queue group and answers from its lagging copy; its
// "404" does not even say which stream answered. Only the leader's API
// answer is read-your-writes whatever happens to the stream, and Get,
// AcquireAs and a lease's release settling decide on it.
func (b *Bucket) Last(ctx context.Context, key string) (Entry, error) {
	if err := CheckKey(key); err != nil {
		return Entry{}, err
	}
	return b.lastBySubject(ctx, b.Subject(key), key)
}

// lastBySubject asks the stream leader for the last message on subject
// (which may hold wildcards) and reports it under key.
func (b *Bucket) lastBySubject(ctx context.Context, subject, key string) (Entry, error) {
	msg, err := b.lastRequest(ctx, "STREAM.MSG.GET.", subject, key)
	if err != nil {
		return Entry{}, err
	}
	var resp msgGetResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return Entry{}, fmt.Errorf("kvx: get %q: decode response: %w", key, err)
	}
	if e := resp.Error; e != nil {
		if e.ErrCode == codeNoMessageFound {
			return Entry{}, fmt.Errorf("%w: %q", ErrNotFound, key)
		}
		return Entry{}, fmt.Errorf("kvx: get %q: %s (code %d, err_code %d)", key, e.Description, e.Code, e.ErrCode)
	}
	m := resp.Message
	if m == nil {
		return Entry{}, fmt.Errorf("kvx: get %q: empty response", key)
	}
	var hdr nats.Header
	if len(m.Header) > 0 {
		if hdr, err = nats.DecodeHeadersMsg(m.Header); err != nil {
			return Entry{}, fmt.Errorf("kvx: get %q: headers: %w", key, err)
		}
	}
	if k, ok := strings.CutPrefix(m.Subject, b.prefix); ok {
		key = k
	}
	return Entry{Key: key, Value: m.Data, Revision: m.Sequence, Op: opOf(hdr), Created: m.Time, MsgID: hdr.Get(jetstream.MsgIDHeader),
		Expiring: hdr.Get(jetstream.MsgTTLHeader) != ""}, nil
}

// Get returns key's live value, read from the stream leader. When the last
// message is a marker it returns that marker's entry together with
// ErrNotFound, so callers can still use its revision.
func (b *Bucket) Get(ctx context.Context, key string) (Entry, error) {
	e, err := b.Last(ctx, key)
	if err != nil {
		return e, err
	}
	if !e.Live() {
		return e, fmt.Errorf("%w: %q (%s at revision %d)", ErrNotFound, key, e.Op, e.Revision)
	}
	return e, nil
}

// Scan calls fn with the live value of every key matching pattern (a KV
// key filter such as ">" or "tasks.*"), in stream order, through one
// ordered consumer rather than a request per key. fn returns false to
// stop. Markers are skipped.
func (b *Bucket) Scan(ctx context.Context, pattern string, fn func(Entry) bool) error {
	w, err := b.kv.Watch(ctx, pattern, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("kvx: scan %q: %w", pattern, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("kvx: scan %q: watcher closed", pattern)
			}
			if e == nil {
				return nil // end of the current values
			}
			if !fn(fromWatch(e)) {
				return nil
			}
		}
	}
}
