package kvx

import (
	"fmt"
	"strings"
)

// EncodeToken maps any string to one KV key token: bytes in
// [A-Za-z0-9_/-] stay as they are and every other byte (including '.',
// '=' and non-ASCII) becomes "=HH" (upper-case hex). The mapping is
// injective, so distinct inputs never share a key, and DecodeToken
// reverses it. The empty string encodes to the empty string, which is not
// a valid key: callers reject empty input.
func EncodeToken(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plainByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xF])
	}
	return b.String()
}

// DecodeToken reverses EncodeToken. It rejects input EncodeToken cannot
// produce (a raw byte outside the plain set, a bad or lower-case escape).
func DecodeToken(t string) (string, error) {
	if !strings.Contains(t, "=") {
		for i := 0; i < len(t); i++ {
			if !plainByte(t[i]) {
				return "", fmt.Errorf("%w: byte %q at %d of %q", ErrInvalidKey, t[i], i, t)
			}
		}
		return t, nil
	}
	out := make([]byte, 0, len(t))
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case plainByte(c):
			out = append(out, c)
		case c == '=' && i+2 < len(t) && isUpperHex(t[i+1]) && isUpperHex(t[i+2]):
			v := unhex(t[i+1])<<4 | unhex(t[i+2])
			if plainByte(v) {
				return "", fmt.Errorf("%w: needless escape at %d of %q", ErrInvalidKey, i, t)
			}
			out = append(out, v)
			i += 2
		default:
			return "", fmt.Errorf("%w: bad escape at %d of %q", ErrInvalidKey, i, t)
		}
	}
	return string(out), nil
}

func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '_' || c == '/'
}

func isUpperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}
