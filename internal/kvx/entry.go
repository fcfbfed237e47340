package kvx

import (
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Op says what a stored message means for its key.
type Op uint8

const (
	// OpPut is a live value.
	OpPut Op = iota
	// OpDelete is a delete marker (KV-Operation: DEL).
	OpDelete
	// OpPurge is a purge marker (KV-Operation: PURGE).
	OpPurge
	// OpExpired is a marker the server wrote when the key's TTL ran out
	// or a limit removed it (Nats-Marker-Reason).
	OpExpired
)

func (o Op) String() string {
	switch o {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpPurge:
		return "purge"
	case OpExpired:
		return "expired"
	}
	return "unknown"
}

// Entry is one stored message of a key.
type Entry struct {
	Key      string
	Value    []byte
	Revision uint64
	Op       Op
	Created  time.Time
	// MsgID is the message's Nats-Msg-Id ("" when it has none or the
	// entry came from a watcher): the identity of the write that stored it.
	MsgID string
	// Expiring: the message carries a per-message TTL (Nats-TTL), so the
	// server removes it when that runs out (set by the reads of one key
	// from the stream, not by watchers).
	Expiring bool
}

// Live reports whether the entry holds a value (not a marker).
func (e Entry) Live() bool { return e.Op == OpPut }

const (
	hdrOperation = "KV-Operation"
	opDel        = "DEL"
	opPurge      = "PURGE"
)

// opOf decodes the operation from a message's headers.
func opOf(h nats.Header) Op {
	if len(h) == 0 {
		return OpPut
	}
	switch h.Get(hdrOperation) {
	case opDel:
		return OpDelete
	case opPurge:
		return OpPurge
	}
	if h.Get(jetstream.MarkerReasonHeader) != "" {
		return OpExpired
	}
	return OpPut
}

// fromWatch converts a watcher entry. nats.go reports expiry markers as
// KeyValuePurge; they are indistinguishable from purges there, and both
// mean "no value".
func fromWatch(e jetstream.KeyValueEntry) Entry {
	op := OpPut
	switch e.Operation() {
	case jetstream.KeyValueDelete:
		op = OpDelete
	case jetstream.KeyValuePurge:
		op = OpPurge
	}
	return Entry{Key: e.Key(), Value: e.Value(), Revision: e.Revision(), Op: op, Created: e.Created()}
}

// OpOf decodes the operation of a stored message from its headers.
func OpOf(h nats.Header) Op { return opOf(h) }
