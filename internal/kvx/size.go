package kvx

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Sizes are checked before a write is sent. A subject longer than the
// server's control line (4096 bytes by default) makes the server close
// the connection ("maximum control line exceeded"), failing every other
// call on it; a payload above max_payload is refused with a message that
// names no limit. Checking first keeps the connection usable and names
// the limit.
const (
	// maxControlLine is nats-server's default max_control_line.
	maxControlLine = 4096
	// controlLineRoom is what a publish's control line needs besides its
	// subject: the verb, the reply inbox and the sizes.
	controlLineRoom = 256
	// MaxSubjectBytes is the longest subject a write sends: a key's
	// limit is this less the bucket's "$KV.<bucket>." prefix.
	MaxSubjectBytes = maxControlLine - controlLineRoom
	// HeaderRoom is the part of the server's max_payload kept for the
	// headers a write carries (expected revision, TTL, message id, batch
	// headers).
	HeaderRoom = 1024
)

var (
	// ErrKeyTooLong means a key whose subject would not fit the server's
	// control line. The message names the limit.
	ErrKeyTooLong = errors.New("kvx: key too long")
	// ErrValueTooLarge means a value that, with its headers, would exceed
	// the server's max_payload. The message names the limit.
	ErrValueTooLarge = errors.New("kvx: value too large")
)

// MaxKeyBytes is the longest key b can write.
func (b *Bucket) MaxKeyBytes() int { return MaxSubjectBytes - len(b.prefix) }

// MaxValueBytes is the largest value b can write on its connection: the
// server's max_payload (as announced to the client) less HeaderRoom.
func (b *Bucket) MaxValueBytes() int { return MaxValueBytes(b.js.Conn()) }

// MaxValueBytes is the largest value a write on nc can carry.
func MaxValueBytes(nc *nats.Conn) int { return int(nc.MaxPayload()) - HeaderRoom }

// checkSize refuses a message that the server would refuse or that would
// cost the connection.
func (b *Bucket) checkSize(m *nats.Msg) error {
	if len(m.Subject) > MaxSubjectBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d for bucket %q (a NATS control line holds %d bytes)",
			ErrKeyTooLong, len(m.Subject)-len(b.prefix), b.MaxKeyBytes(), b.name, maxControlLine)
	}
	if limit := b.MaxValueBytes(); len(m.Data) > limit {
		return fmt.Errorf("%w: %d bytes, the limit is %d (the server's max_payload %d less %d for headers)",
			ErrValueTooLarge, len(m.Data), limit, b.js.Conn().MaxPayload(), HeaderRoom)
	}
	return nil
}
