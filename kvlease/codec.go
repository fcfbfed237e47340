package kvlease

import (
	"fmt"
	"strconv"
)

// Codec maps a family's resource keys to strings and back. The string may
// hold any bytes: the package escapes it into one KV key token (see
// Leases), so a codec only has to be injective and reversible. Encode must
// reject what it cannot represent; an empty result is rejected by the
// package.
type Codec[K any] interface {
	Encode(key K) (string, error)
	Decode(s string) (K, error)
}

// StringCodec is the identity codec for string keys. Any non-empty string
// is a key ("a.b", "α", "x y" included): escaping makes it a KV token.
type StringCodec struct{}

// Encode returns s itself, rejecting the empty string.
func (StringCodec) Encode(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: empty string key", ErrInvalidKey)
	}
	return s, nil
}

// Decode returns s itself, rejecting the empty string.
func (StringCodec) Decode(s string) (string, error) { return StringCodec{}.Encode(s) }

// Int64Codec encodes int64 keys in canonical decimal ("-12", "0", "7").
type Int64Codec struct{}

// Encode formats n in decimal.
func (Int64Codec) Encode(n int64) (string, error) { return strconv.FormatInt(n, 10), nil }

// Decode parses canonical decimal only, so Decode is Encode's exact
// inverse ("+1", "01" and "-0" are rejected).
func (Int64Codec) Decode(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("%w: %q is not a canonical int64", ErrInvalidKey, s)
	}
	return n, nil
}

// CodecFunc builds a Codec from two functions, for custom key types.
func CodecFunc[K any](encode func(K) (string, error), decode func(string) (K, error)) Codec[K] {
	return funcCodec[K]{encode, decode}
}

type funcCodec[K any] struct {
	enc func(K) (string, error)
	dec func(string) (K, error)
}

func (c funcCodec[K]) Encode(k K) (string, error) { return c.enc(k) }
func (c funcCodec[K]) Decode(s string) (K, error) { return c.dec(s) }

// Name names a lease or semaphore family. It is the first token of every
// lease key of the family: 1..64 bytes of [A-Za-z0-9_-].
type Name string

// Validate reports whether n is a usable family name.
func (n Name) Validate() error {
	if len(n) > 64 || !validName(string(n)) {
		return fmt.Errorf("%w: %q must be 1..64 bytes of [A-Za-z0-9_-]", ErrInvalidName, string(n))
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
