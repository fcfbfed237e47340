package kvlease

import (
	"encoding/json"
	"fmt"

	"github.com/natscoord/natscoord/internal/kvx"
)

// A lease key whose value is not a lease (written with `nats kv put`, or
// damaged) is neither free nor held by anyone who will ever renew or
// release it, and a value put without a TTL never expires. Acquisitions
// report it with ErrCorruptValue instead of treating it as contention
// (which made waiters wait for ever); Holder reports it; ForceRelease
// removes it.

// decodeValue parses a stored lease value. Anything that does not decode
// or lacks the fields every lease value has (an owner hash, a positive
// TTL) is ErrCorruptValue.
func decodeValue(b []byte) (Holder, error) {
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return Holder{}, fmt.Errorf("%w: %w", ErrCorruptValue, err)
	}
	if !validOwnerHash(h.OwnerHash) || h.TTLMillis <= 0 {
		return Holder{}, fmt.Errorf("%w: no owner hash or TTL", ErrCorruptValue)
	}
	return h, nil
}

// corruptValue reports whether a live value is not a lease. The common
// case, a value laid out as appendValue writes it, is settled by its tail
// without a decode.
func corruptValue(b []byte) bool {
	if _, _, ok := valueTail(b); ok {
		return false
	}
	_, err := decodeValue(b)
	return err != nil
}

// corruptEntry reports whether e is a stored live value that is not a
// lease. A zero Entry (revision 0: no entry at all, as kvx returns with a
// conflict it lost to unseen writers) is never corrupt.
func corruptEntry(e kvx.Entry) bool {
	return e.Revision != 0 && e.Live() && corruptValue(e.Value)
}

// corruptErr is the acquisition error for key holding a value that is not
// a lease.
func corruptErr(key string, rev uint64) error {
	return fmt.Errorf("%w: %q at revision %d holds no lease value (remove it with ForceRelease)", ErrCorruptValue, key, rev)
}

func validOwnerHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
