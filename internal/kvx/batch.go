package kvx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// codeAtomicDisabled is the API error of a batch sent to a stream
// without AllowAtomicPublish.
const codeAtomicDisabled = 10174

// MaxBatch is the most messages the server accepts in one atomic batch.
const MaxBatch = 1000

// ErrNoAtomic means the bucket's stream does not allow atomic batch
// publishes (StreamConfig.AllowAtomicPublish, nats-server >= 2.12).
var ErrNoAtomic = errors.New("kvx: stream does not allow atomic batches")

// AtomicBatches reports whether the bucket's stream accepts atomic batch
// publishes. A yes is remembered (Bind takes it from the bucket's status,
// so it costs no round trip); a batch refused for want of it
// (ErrNoAtomic) forgets it. A no is asked again each time: another
// process may enable batches meanwhile.
func (b *Bucket) AtomicBatches(ctx context.Context) (bool, error) {
	if b.atomic.Load() {
		return true, nil
	}
	s, err := b.js.Stream(ctx, b.stream)
	if err != nil {
		return false, fmt.Errorf("kvx: stream %q: %w", b.stream, err)
	}
	ok := s.CachedInfo().Config.AllowAtomicPublish
	b.atomic.Store(ok)
	return ok, nil
}

// EnableAtomicBatches sets AllowAtomicPublish on the bucket's stream (it
// changes the stream's configuration). A server that takes the update
// but does not know the setting (before nats-server 2.12) answers with
// a configuration without it: that is ErrNoAtomic, so no batch is ever
// sent to a server that would store its messages one by one.
func (b *Bucket) EnableAtomicBatches(ctx context.Context) error {
	s, err := b.js.Stream(ctx, b.stream)
	if err != nil {
		return fmt.Errorf("kvx: stream %q: %w", b.stream, err)
	}
	cfg := s.CachedInfo().Config
	if !cfg.AllowAtomicPublish {
		cfg.AllowAtomicPublish = true
		info, err := b.js.UpdateStream(ctx, cfg)
		if err != nil {
			return fmt.Errorf("kvx: enable atomic batches on %q: %w", b.stream, err)
		}
		if info == nil || !info.CachedInfo().Config.AllowAtomicPublish {
			b.atomic.Store(false)
			return fmt.Errorf("%w: the server kept %q without it", ErrNoAtomic, b.stream)
		}
	}
	b.atomic.Store(true)
	return nil
}

// CreateBatchAs creates every key with its value in one atomic batch (at
// most MaxBatch) under the caller's batch id: all of them, or none when
// any key already has a live value or marker-free history (ErrConflict)
// or the server refuses the batch. It returns the revision of each key,
// in order. The messages go out without replies; only the commit is
// answered, so the batch costs one round trip. Message i carries
// Nats-Msg-Id BatchMsgID(id, i), so a commit whose answer was lost
// (OutcomeUnknown: it may have landed) is settled by finding that id on a
// key (Entry.MsgID), never by comparing bytes that an identical earlier
// batch would share.
// hdrs, when not nil, holds headers stored with each message (one per
// key; nil entries for none).
func (b *Bucket) CreateBatchAs(ctx context.Context, id string, keys []string, values [][]byte, hdrs []nats.Header) ([]uint64, error) {
	if len(keys) == 0 || len(keys) != len(values) || len(keys) > MaxBatch || (hdrs != nil && len(hdrs) != len(keys)) {
		return nil, fmt.Errorf("kvx: batch of %d keys, %d values (max %d)", len(keys), len(values), MaxBatch)
	}
	for _, k := range keys {
		if err := CheckKey(k); err != nil {
			return nil, err
		}
	}
	// A commit answered "no responders" reached no stream, and neither
	// did the messages before it (core publishes to no interest, as on a
	// fresh replicated bucket): the whole batch is sent again, under a new
	// Nats-Batch-Id so no server mixes it with a partial first try, with
	// the same policy single writes get (noResponders). The message ids
	// stay the caller's: nothing was stored under them.
	// When every try reached no stream, nothing was stored: resend's
	// ErrNoStreamResponse, a known failure, as for a single write.
	var revs []uint64
	ctx, cancel := b.bound(ctx)
	defer cancel()
	err := resend(ctx, func(n int) error {
		batch := id
		if n > 0 {
			batch = id + "-" + strconv.Itoa(n)
		}
		var err error
		revs, err = b.sendBatch(ctx, batch, id, keys, values, hdrs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return revs, nil
}

// sendBatch sends one try of CreateBatchAs under the batch id batch.
func (b *Bucket) sendBatch(ctx context.Context, batch, id string, keys []string, values [][]byte, hdrs []nats.Header) ([]uint64, error) {
	if err := b.replies.refused(); err != nil {
		return nil, err // closed: not one message sent
	}
	nc := b.js.Conn()
	// One message, header map and array of header values serve every
	// message of the batch: nats.go encodes a message into the
	// connection's buffer before its publish or request returns and keeps
	// no reference to it (as outMsg relies on). The keys are canonical,
	// as Header.Set would make them.
	m := &nats.Msg{Header: make(nats.Header, 8)}
	var vals [5]string
	set := func(j int, k, v string) {
		vals[j] = v
		m.Header[k] = vals[j : j+1 : j+1]
	}
	for i, k := range keys {
		clear(m.Header)
		if hdrs != nil {
			for hk, hv := range hdrs[i] {
				m.Header[hk] = hv
			}
		}
		m.Subject, m.Data = b.Subject(k), values[i]
		set(0, jetstream.ExpectedLastSubjSeqHeader, "0")
		set(1, "Nats-Batch-Id", batch)
		set(2, "Nats-Batch-Sequence", strconv.Itoa(i+1))
		set(3, jetstream.MsgIDHeader, BatchMsgID(id, i))
		if i < len(keys)-1 {
			if err := nc.PublishMsg(m); err != nil {
				return nil, err
			}
			continue
		}
		set(4, "Nats-Batch-Commit", "1")
		// The commit is answered as every write is (post, answer);
		// a "no responders" is CreateBatchAs's to resend.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		token, ch, err := b.post(m)
		if err != nil {
			return nil, err
		}
		resp, err := b.answer(ctx, token, ch)
		if err != nil {
			return nil, err
		}
		var ack struct {
			Seq   uint64              `json:"seq"`
			Count int                 `json:"count"`
			Error *jetstream.APIError `json:"error"`
		}
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return nil, fmt.Errorf("kvx: batch commit answer %q: %w", resp.Data, err)
		}
		if ack.Error != nil {
			if ack.Error.ErrorCode == codeAtomicDisabled {
				b.atomic.Store(false)
				return nil, fmt.Errorf("%w: %w", ErrNoAtomic, ack.Error)
			}
			return nil, mapErr(ack.Error)
		}
		if ack.Count != len(keys) || ack.Seq < uint64(len(keys)) {
			return nil, fmt.Errorf("kvx: batch commit stored %d of %d messages (seq %d)", ack.Count, len(keys), ack.Seq)
		}
		revs := make([]uint64, len(keys))
		for j := range revs {
			revs[j] = ack.Seq - uint64(len(keys)-1-j)
		}
		return revs, nil
	}
	return nil, nil // unreachable
}

// BatchMsgID is the Nats-Msg-Id of message i (from 0) of the batch id.
func BatchMsgID(id string, i int) string { return id + "." + strconv.Itoa(i+1) }
