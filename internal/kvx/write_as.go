package kvx

import (
	"context"
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
	if err := CheckKey(key); err != nil {
		return 0, err
	}
	m := &nats.Msg{Subject: b.Subject(key), Header: nats.Header{hdrOperation: []string{opDel}}}
	opts := make([]jetstream.PublishOpt, 0, 4)
	opts = append(opts, noResponderRetry, jetstream.WithExpectLastSequencePerSubject(rev))
	if ttl > 0 {
		opts = append(opts, jetstream.WithMsgTTL(ttl))
	}
	if id != "" {
		opts = append(opts, jetstream.WithMsgID(id))
	}
	return b.publish(ctx, m, opts...)
}
