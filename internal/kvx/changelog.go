package kvx

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// EntryOfMsg decodes a message of the bucket's stream (as a consumer of
// the stream delivers it) into an Entry: its key, value, revision and
// operation, with markers recognised as they are for Get and watches.
func (b *Bucket) EntryOfMsg(m jetstream.Msg) (Entry, error) {
	meta, err := m.Metadata()
	if err != nil {
		return Entry{}, fmt.Errorf("kvx: change log message: %w", err)
	}
	key, ok := strings.CutPrefix(m.Subject(), b.prefix)
	if !ok {
		return Entry{}, fmt.Errorf("kvx: change log message on %q, outside bucket %q", m.Subject(), b.name)
	}
	op := opOf(m.Headers())
	if op == OpPut && len(m.Data()) == 0 && m.Headers().Get(jetstream.MarkerReasonHeader) != "" {
		op = OpExpired
	}
	return Entry{Key: key, Value: m.Data(), Revision: meta.Sequence.Stream, Op: op, Created: meta.Timestamp}, nil
}

// LastRevision is the bucket's last revision (its stream's last sequence)
// as the stream leader reports it now.
func (b *Bucket) LastRevision(ctx context.Context) (uint64, error) {
	s, err := b.js.Stream(ctx, b.stream)
	if err != nil {
		return 0, fmt.Errorf("kvx: stream %q: %w", b.stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("kvx: stream %q: %w", b.stream, err)
	}
	return info.State.LastSeq, nil
}
