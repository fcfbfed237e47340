package kvledger

import (
	"github.com/nats-io/nuid"
)

// writeID returns the identity of one write attempt of a record: its
// publish carries it as Nats-Msg-Id, which the server stores with the
// message. An attempt whose answer is lost is settled by finding its own
// id on the key, never by comparing bytes: a retry with the same
// arguments (same actor, sequence and time) encodes the same record, and
// a byte comparison would take the earlier write for this one.
//
// The id lives in a header, so the record itself reads as before with
// `nats kv get`. While the stream's duplicate window lasts (two minutes by
// default) the server keeps each id, and a repeated publish of the same
// attempt is acknowledged with the original revision instead of being
// written twice.
func writeID() string { return nuid.Next() }

// landedWrite reads key back from the stream leader after an
// outcome-unknown write whose Nats-Msg-Id was id: it landed when the key's
// last message is that write. It reads under the shared op-bounded
// context (OpTimeout.Shared), not the caller's: the write stands whatever
// the caller does next, so a caller giving up must not hide its outcome.
func (s *KVStore) landedWrite(key, id string) (uint64, bool) {
	e, err := s.b.Get(s.ops.Shared(), key)
	if err != nil || e.MsgID != id {
		return 0, false
	}
	return e.Revision, true
}
