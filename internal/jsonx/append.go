// Package jsonx writes and reads JSON as encoding/json does, without
// reflection, for the hot paths of kvledger's records and of events:
// appending gives encoding/json's bytes, and Scanner gives what
// encoding/json decodes, for the shapes it takes (the callers' fuzz
// tests compare both with encoding/json), so stored formats are
// untouched. Where encoding/json must decide (a value it refuses, a shape
// these functions do not reproduce) a function returns ok=false and the
// caller falls back to encoding/json.
package jsonx

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// AppendOptional appends an omitempty string field, name (with its
// leading comma, quotes and colon) and v quoted, unless v is empty.
func AppendOptional(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return AppendString(append(b, name...), v)
}

// AppendTime appends t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds, quoted); ok is false for the times it refuses.
func AppendTime(b []byte, t time.Time) ([]byte, bool) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	return append(b, '"'), err == nil
}

// maxDepth bounds the nesting AppendValue and Scanner follow. Deeper
// values go to encoding/json: when encoding, it reports a map that
// contains itself as an error instead of overflowing the stack; when
// decoding, it allows far more nesting.
const maxDepth = 32

// AppendValue appends v as encoding/json encodes it inside an `any`
// field; depth is the nesting already written (0 at the top). It writes the types a decoded JSON payload and common Go
// payloads are made of itself; any other type (structs, named types that
// may have marshalers, []byte) is marshaled by encoding/json and appended.
func AppendValue(b []byte, v any, depth int) ([]byte, bool) {
	if depth >= maxDepth {
		return AppendMarshaled(b, v)
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return AppendString(b, v), true
	case bool:
		return strconv.AppendBool(b, v), true
	case json.Number:
		// Its text as it is, as encoding/json writes it; an empty or
		// invalid one is encoding/json's to write ("0") or refuse.
		if v == "" || !ValidNumber(string(v)) {
			return AppendMarshaled(b, v)
		}
		return append(b, v...), true
	case float64:
		return appendFloat(b, v, 64)
	case float32:
		return appendFloat(b, float64(v), 32)
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int32:
		return strconv.AppendInt(b, int64(v), 10), true
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint64:
		return strconv.AppendUint(b, v, 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), true
	case map[string]any:
		return appendObject(b, v, func(b []byte, e any) ([]byte, bool) { return AppendValue(b, e, depth+1) })
	case map[string]string:
		return appendObject(b, v, func(b []byte, e string) ([]byte, bool) { return AppendString(b, e), true })
	case []any:
		return appendArray(b, v, func(b []byte, e any) ([]byte, bool) { return AppendValue(b, e, depth+1) })
	case []string:
		return appendArray(b, v, func(b []byte, e string) ([]byte, bool) { return AppendString(b, e), true })
	}
	return AppendMarshaled(b, v)
}

// appendArray appends v as encoding/json writes a slice (null when
// nil), each element by elem; ok is false as soon as one element fails.
func appendArray[T any](b []byte, v []T, elem func([]byte, T) ([]byte, bool)) ([]byte, bool) {
	if v == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, e := range v {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = elem(b, e); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendObject appends m as encoding/json writes a map (null when nil):
// keys in sorted order, each value by elem; ok is false as soon as one
// value fails.
func appendObject[V any](b []byte, m map[string]V, elem func([]byte, V) ([]byte, bool)) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), true
	}
	var small [16]field[V]
	b = append(b, '{')
	for i, f := range sortedFields(m, small[:0]) {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, f.k)
		b = append(b, ':')
		var ok bool
		if b, ok = elem(b, f.v); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// field is one entry of a map being encoded.
type field[V any] struct {
	k string
	v V
}

// sortedFields appends m's entries to fields, sorted by key (collecting
// the values too saves looking every key up again).
func sortedFields[V any](m map[string]V, fields []field[V]) []field[V] {
	for k, v := range m {
		fields = append(fields, field[V]{k, v})
	}
	slices.SortFunc(fields, func(a, b field[V]) int { return strings.Compare(a.k, b.k) })
	return fields
}

// AppendMarshaled appends json.Marshal(v): the fallback for values AppendValue does not
// write itself.
func AppendMarshaled(b []byte, v any) ([]byte, bool) {
	m, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, m...), true
}

// appendFloat appends f as encoding/json writes a float of the given
// bit size: the shortest representation, in exponent form only outside
// [1e-6, 1e21), with a one-digit negative exponent unpadded. NaN and the
// infinities are refused (encoding/json reports them as errors).
func appendFloat(b []byte, f float64, bits int) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// AppendString appends s quoted as encoding/json quotes strings (with
// HTML escaping, its default): '"' and '\\' backslashed, \b \f \n \r \t
// by name, other control bytes and < > & as \u00XX, invalid UTF-8 as
// \ufffd, and U+2028 and U+2029 escaped.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
