package kvx

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LastFresh is Last answered the cheapest way that sees every write
// acknowledged while the bucket is as it was bound (see Last for when
// that is not enough): on a bucket with one replica that server is the
// leader, and its direct get (answered inline, about 2.5x faster here
// than the leader's API request, which goes through the JetStream API
// queue) says the same thing; on a replicated bucket any replica may
// answer a direct get, so the leader is asked.
func (b *Bucket) LastFresh(ctx context.Context, key string) (Entry, error) {
	if err := CheckKey(key); err != nil {
		return Entry{}, err
	}
	if !b.directIsLeader {
		return b.lastBySubject(ctx, b.Subject(key), key)
	}
	return b.directLast(ctx, b.Subject(key), key)
}

// directLast asks the stream's direct get for the last message on subject
// (which may hold wildcards) and reports it under key.
func (b *Bucket) directLast(ctx context.Context, subject, key string) (Entry, error) {
	msg, err := b.lastRequest(ctx, "DIRECT.GET.", subject, key)
	if err != nil {
		return Entry{}, err
	}
	if st := msg.Header.Get("Status"); st != "" {
		if st == "404" {
			return Entry{}, fmt.Errorf("%w: %q", ErrNotFound, key)
		}
		return Entry{}, fmt.Errorf("kvx: get %q: status %s %s", key, st, msg.Header.Get("Description"))
	}
	seq, err := strconv.ParseUint(msg.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return Entry{}, fmt.Errorf("kvx: get %q: sequence header: %w", key, err)
	}
	if k, ok := strings.CutPrefix(msg.Header.Get(jetstream.SubjectHeader), b.prefix); ok {
		key = k
	}
	created, _ := time.Parse(time.RFC3339Nano, msg.Header.Get(jetstream.TimeStampHeaer))
	return Entry{Key: key, Value: msg.Data, Revision: seq, Op: opOf(nats.Header(msg.Header)), Created: created, MsgID: msg.Header.Get(jetstream.MsgIDHeader),
		Expiring: msg.Header.Get(jetstream.MsgTTLHeader) != ""}, nil
}

// lastRequest sends a last-by-subject request to the stream's API
// endpoint api ("STREAM.MSG.GET." or "DIRECT.GET."), bounded by the
// connection's default timeout when ctx has no deadline.
func (b *Bucket) lastRequest(ctx context.Context, api, subject, key string) (*nats.Msg, error) {
	req, err := json.Marshal(msgGetRequest{LastBySubject: subject})
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, OpTimeoutOf(b.js))
		defer cancel()
	}
	msg, err := b.js.Conn().RequestWithContext(ctx, b.apiPrefix+api+b.stream, req)
	if err != nil {
		return nil, fmt.Errorf("kvx: get %q: %w", key, err)
	}
	return msg, nil
}
