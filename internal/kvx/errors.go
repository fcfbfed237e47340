package kvx

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	// ErrConflict means a compare-and-set lost: the key's revision was not
	// the expected one (API errors 10071 and 10164, ErrKeyExists,
	// ErrKeyRevisionMismatch).
	ErrConflict = errors.New("kvx: revision conflict")
	// ErrUnsettled means a write was refused as a conflict while the key
	// kept reading at exactly the revision the write expected, attempt
	// after attempt: not contention (nobody else wrote), but an answer
	// from a server whose view is not the cluster's (a stream leader cut
	// off in a minority, or deposed and not yet aware, refuses from its
	// own state, pending writes included). The write may yet land
	// elsewhere, so it is an unknown outcome (OutcomeUnknown).
	ErrUnsettled = errors.New("kvx: write refused while the key reads at the expected revision")
	// ErrNotFound means the key has no live value.
	ErrNotFound = errors.New("kvx: key not found")
	// ErrNoTTL means the bucket was created without LimitMarkerTTL, so
	// per-key TTLs are refused.
	ErrNoTTL = errors.New("kvx: bucket has no LimitMarkerTTL; per-key TTLs are disabled")
	// ErrInvalidTTL means the server refused a TTL (below one second).
	ErrInvalidTTL = errors.New("kvx: invalid TTL")
	// ErrInvalidKey means a key cannot be stored in a KV bucket.
	ErrInvalidKey = errors.New("kvx: invalid key")
)

// JetStream API error codes this package maps.
const (
	codeWrongLastSeq         = 10071
	codeWrongLastSeqConstant = 10164
	codeTTLInvalid           = 10165
	codeTTLDisabled          = 10166
	codeNoMessageFound       = 10037
	codeMsgIDInProcess       = 10158
)

// mapErr turns server CAS and TTL refusals into this package's sentinels
// (keeping the original error in the chain) and leaves every other error
// untouched.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case codeWrongLastSeq, codeWrongLastSeqConstant:
			return fmt.Errorf("%w: %w", ErrConflict, err)
		case codeTTLInvalid:
			return fmt.Errorf("%w: %w", ErrInvalidTTL, err)
		case codeTTLDisabled:
			return fmt.Errorf("%w: %w", ErrNoTTL, err)
		}
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// IsConflict reports whether err is a lost compare-and-set.
func IsConflict(err error) bool { return errors.Is(err, ErrConflict) }

// OutcomeUnknown reports whether a write that failed with err may
// nevertheless have been applied: the request left this client but no
// answer came back (timeout, cancelled context, connection lost), or the
// write repeated an id whose first publish is still in process (10158), or
// its Bucket closed before the answer came (ErrClosedUnanswered; a write
// the closed Bucket refused, ErrClosed alone, was never sent). Such a
// write must be resolved by reading the key, never by assuming failure.
func OutcomeUnknown(err error) bool {
	if err == nil || IsConflict(err) {
		return false
	}
	if errors.Is(err, ErrUnsettled) || errors.Is(err, ErrClosedUnanswered) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// The server answered: the write was refused, unless the answer
		// is that an earlier publish with the same Nats-Msg-Id is still
		// being proposed, which may yet land.
		return apiErr.ErrorCode == codeMsgIDInProcess
	}
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) ||
		errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrConnectionClosed) ||
		errors.Is(err, nats.ErrConnectionDraining) ||
		errors.Is(err, nats.ErrDisconnected)
}
