package kvledger

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// appendRecord appends the stored form of s (kvRecord) to b without
// reflection. The output is byte for byte what json.Marshal of the
// kvRecord gives (FuzzAppendRecord checks it), so the stored format, the
// decoder and old records are untouched; this only makes the write path
// cheaper, where encoding/json was most of the client's CPU time in Admit
// of a new key (map key sorting, reflection on every field, time
// marshalers, one allocation per step).
//
// ok is false when encoding/json must decide: a time it refuses, a Task
// value it rejects (NaN, a channel) or whose encoding this file does not
// reproduce. The caller then marshals with encoding/json, which returns
// the same bytes or the same error as before.
func appendRecord(b []byte, s TaskState, insert bool) ([]byte, bool) {
	ok := true
	b = append(b, `{"key":`...)
	b = appendJSONString(b, string(s.Key))
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(s.Status))
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, uint64(s.Sequence), 10)
	if s.Owner != "" {
		b = append(b, `,"owner":`...)
		b = appendJSONString(b, string(s.Owner))
	}
	b = append(b, `,"fence":`...)
	b = strconv.AppendUint(b, uint64(s.Fence), 10)
	if !s.LeaseUntil.IsZero() {
		b = append(b, `,"lease_until":`...)
		if b, ok = appendJSONTime(b, s.LeaseUntil); !ok {
			return b, false
		}
	}
	if len(s.Needs) > 0 {
		b = append(b, `,"needs":[`...)
		for i, n := range s.Needs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, string(n))
		}
		b = append(b, ']')
	}
	if s.BlockedBy != "" {
		b = append(b, `,"blocked_by":`...)
		b = appendJSONString(b, string(s.BlockedBy))
	}
	if s.Task != nil {
		b = append(b, `,"task":`...)
		if b, ok = appendJSONValue(b, s.Task, 0); !ok {
			return b, false
		}
	}
	if s.CreatedBy != "" {
		b = append(b, `,"created_by":`...)
		b = appendJSONString(b, string(s.CreatedBy))
	}
	var created []byte
	if !s.CreatedAt.IsZero() {
		b = append(b, `,"created_at":`...)
		n := len(b)
		if b, ok = appendJSONTime(b, s.CreatedAt); !ok {
			return b, false
		}
		created = b[n:]
	}
	if s.UpdatedBy != "" {
		b = append(b, `,"updated_by":`...)
		b = appendJSONString(b, string(s.UpdatedBy))
	}
	if !s.UpdatedAt.IsZero() {
		b = append(b, `,"updated_at":`...)
		if created != nil && s.UpdatedAt == s.CreatedAt {
			// The same instant in the same location formats the same:
			// reuse the text (an insert's two times are both "now").
			b = append(b, created...)
		} else if b, ok = appendJSONTime(b, s.UpdatedAt); !ok {
			return b, false
		}
	}
	if s.LastEvent != "" {
		b = append(b, `,"last_event":`...)
		b = appendJSONString(b, string(s.LastEvent))
	}
	if b, ok = appendRuntimeFields(b, s); !ok {
		return b, false
	}
	if insert {
		b = append(b, `,"ins":true`...)
	}
	return append(b, '}'), true
}

// appendJSONTime appends t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds, quoted); ok is false for the times it refuses.
func appendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	return append(b, '"'), err == nil
}

// maxDirectDepth bounds the recursion of appendJSONValue. Deeper values
// (and a map that contains itself) go to encoding/json, which reports a
// cycle as an error instead of overflowing the stack.
const maxDirectDepth = 32

// appendJSONValue appends v as encoding/json encodes it inside an `any`
// field. It writes the types a decoded JSON payload and common Go
// payloads are made of itself; any other type (structs, named types that
// may have marshalers, []byte) is marshaled by encoding/json and appended.
func appendJSONValue(b []byte, v any, depth int) ([]byte, bool) {
	if depth >= maxDirectDepth {
		return appendMarshaled(b, v)
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendJSONString(b, v), true
	case bool:
		return strconv.AppendBool(b, v), true
	case float64:
		return appendJSONFloat(b, v, 64)
	case float32:
		return appendJSONFloat(b, float64(v), 32)
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
		if v == nil {
			return append(b, "null"...), true
		}
		return appendJSONObject(b, v, depth)
	case map[string]string:
		if v == nil {
			return append(b, "null"...), true
		}
		return appendJSONStrings(b, v), true
	case []any:
		return appendJSONArray(b, v, func(b []byte, e any) ([]byte, bool) { return appendJSONValue(b, e, depth+1) })
	case []string:
		return appendJSONArray(b, v, func(b []byte, e string) ([]byte, bool) { return appendJSONString(b, e), true })
	}
	return appendMarshaled(b, v)
}

// appendJSONArray appends v as encoding/json writes a slice (null when
// nil), each element by elem; ok is false as soon as one element fails.
func appendJSONArray[T any](b []byte, v []T, elem func([]byte, T) ([]byte, bool)) ([]byte, bool) {
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

// appendJSONObject appends m with its keys in sorted order, as
// encoding/json writes maps.
func appendJSONObject(b []byte, m map[string]any, depth int) ([]byte, bool) {
	var small [16]field[any]
	b = append(b, '{')
	for i, f := range sortedFields(m, small[:0]) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.k)
		b = append(b, ':')
		var ok bool
		if b, ok = appendJSONValue(b, f.v, depth+1); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendJSONStrings is appendJSONObject for a map of strings.
func appendJSONStrings(b []byte, m map[string]string) []byte {
	var small [16]field[string]
	b = append(b, '{')
	for i, f := range sortedFields(m, small[:0]) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.k)
		b = append(b, ':')
		b = appendJSONString(b, f.v)
	}
	return append(b, '}')
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

// appendMarshaled is the fallback for values appendJSONValue does not
// write itself.
func appendMarshaled(b []byte, v any) ([]byte, bool) {
	m, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, m...), true
}

// appendJSONFloat appends f as encoding/json writes a float of the given
// bit size: the shortest representation, in exponent form only outside
// [1e-6, 1e21), with a one-digit negative exponent unpadded. NaN and the
// infinities are refused (encoding/json reports them as errors).
func appendJSONFloat(b []byte, f float64, bits int) ([]byte, bool) {
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

// appendJSONString appends s quoted as encoding/json quotes strings (with
// HTML escaping, its default): '"' and '\\' backslashed, \b \f \n \r \t
// by name, other control bytes and < > & as \u00XX, invalid UTF-8 as
// \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
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

// recordSizeHint is a capacity for appendRecord's buffer that a record
// with a small task payload fits in, so it is allocated once.
func recordSizeHint(s TaskState) int {
	n := 320 + len(s.Key) + len(s.Owner) + len(s.BlockedBy) + len(s.CreatedBy) + len(s.UpdatedBy)
	for _, k := range s.Needs {
		n += len(k) + 3
	}
	return n
}
