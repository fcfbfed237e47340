package kvledger

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/natscoord/natscoord/internal/kvx"
)

// CorruptRecord names one stored value that is not a valid record.
type CorruptRecord struct {
	// Key is the record's idempotency key, empty when the bucket key
	// itself does not decode to one.
	Key IdempotencyKey
	// BucketKey is the key in the store (for the KVStore: the KV key,
	// "task.<escaped key>").
	BucketKey string
	// Revision is the revision of the corrupt value.
	Revision uint64
	// Err says what is wrong with it; it matches ErrCorruptRecord.
	Err error
}

// CorruptRecordsError is returned by a Range (and so by Snapshot) that
// met records that are not valid: every other record was still passed to
// fn, and the error names the ones that were not. It matches
// ErrCorruptRecord with errors.Is. An operator removes such a record with
// KVStore.ForceDelete (`natscoord ledger rm --force KEY`).
type CorruptRecordsError struct {
	Records []CorruptRecord
}

func (e *CorruptRecordsError) Error() string {
	names := make([]string, 0, len(e.Records))
	for _, r := range e.Records {
		names = append(names, fmt.Sprintf("%q (revision %d)", r.BucketKey, r.Revision))
	}
	return fmt.Sprintf("%s: %d corrupt: %s", ErrCorruptRecord, len(e.Records), strings.Join(names, ", "))
}

// Unwrap makes errors.Is match ErrCorruptRecord and each record's error.
func (e *CorruptRecordsError) Unwrap() []error {
	out := []error{ErrCorruptRecord}
	for _, r := range e.Records {
		out = append(out, r.Err)
	}
	return out
}

// ForceDelete removes key's stored value whatever it holds, also a value
// that does not decode as a record, and reports whether there was one.
// It is an operator's repair tool, not a ledger transition (its delete
// marker reads as DeletedEvent), and the key can be admitted again (its fence floor is the
// bucket revision, so tokens stay monotonic). The delete is conditioned
// on the revision it read, so a record rewritten meanwhile is not removed.
// Its delete marker is DeleteRecord's: under a retention it expires.
func (s *KVStore) ForceDelete(ctx context.Context, key IdempotencyKey) (bool, error) {
	if key == "" {
		return false, fmt.Errorf("%w: empty key", ErrInvalidState)
	}
	k := taskKey(key)
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	e, err := s.b.Get(octx, k)
	if errors.Is(err, kvx.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kvledger: force delete %q: %w", string(key), err)
	}
	if _, err := s.deleteAt(octx, k, e.Revision); err != nil {
		return false, fmt.Errorf("kvledger: force delete %q: %w", string(key), err)
	}
	return true, nil
}

// CheckRecord implements RecordChecker: rec encodes, and its key and value
// fit the server's control line and max_payload.
func (s *KVStore) CheckRecord(rec TaskState) error {
	value, err := encodeRecord(rec, true)
	if err != nil {
		return err
	}
	if k := taskKey(rec.Key); len(k) > s.b.MaxKeyBytes() {
		return fmt.Errorf("%w: key %s is %d bytes once escaped, the limit is %d", ErrTooLarge, shortKey(rec.Key), len(k), s.b.MaxKeyBytes())
	}
	if limit := s.b.MaxValueBytes(); len(value) > limit {
		return fmt.Errorf("%w: record %s is %d bytes, the limit is %d (the server's max_payload less room for headers)",
			ErrTooLarge, shortKey(rec.Key), len(value), limit)
	}
	return nil
}
