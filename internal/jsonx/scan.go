package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner reads a JSON text from its start, for decoders that take the
// shape their own encoder writes and decline everything else, after
// which the caller decodes with encoding/json. A method that returns
// false means "decline": the input may still be valid JSON, and the
// Scanner's position is then unspecified.
type Scanner struct {
	b []byte
	i int
}

// NewScanner returns a Scanner at the start of b.
func NewScanner(b []byte) Scanner { return Scanner{b: b} }

// Done reports whether every byte was consumed.
func (d *Scanner) Done() bool { return d.i == len(d.b) }

// Next returns the next byte without consuming it (0 at the end).
func (d *Scanner) Next() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// Value consumes any JSON value and returns it as Unmarshal decodes into
// an `any`: map[string]any, []any, json.Number, string, bool or nil.
// Nesting deeper than maxDepth is declined.
func (d *Scanner) Value() (any, bool) { return d.value(0, true) }

// RawValue consumes any JSON value and returns its bytes, validated as
// Value would but not built.
func (d *Scanner) RawValue() ([]byte, bool) {
	start := d.i
	if _, ok := d.value(0, false); !ok {
		return nil, false
	}
	return d.b[start:d.i], true
}

// Eat consumes c if it is the next byte.
func (d *Scanner) Eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// Str consumes a JSON string and returns its raw contents (between the
// quotes) and whether they hold escapes. It validates as encoding/json's
// scanner does (no control bytes, only the defined escapes) and declines
// invalid UTF-8 and escaped surrogate halves, which encoding/json
// replaces or pairs.
func (d *Scanner) Str() (raw []byte, esc, ok bool) {
	if !d.Eat('"') {
		return nil, false, false
	}
	high := false
	for j := d.i; j < len(d.b); j++ {
		for j < len(d.b) && plainByte[d.b[j]] {
			j++
		}
		if j == len(d.b) {
			break
		}
		switch c := d.b[j]; {
		case c == '"':
			raw, d.i = d.b[d.i:j], j+1
			return raw, esc, !high || utf8.Valid(raw)
		case c == '\\':
			esc = true
			if j++; j >= len(d.b) {
				return nil, false, false
			}
			switch d.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if r := hex4(d.b[j+1:]); r < 0 || utf16.IsSurrogate(r) {
					return nil, false, false
				}
				j += 4
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		case c >= utf8.RuneSelf:
			high = true
		}
	}
	return nil, false, false
}

// plainByte marks the bytes Str passes over without a second look:
// printable ASCII other than the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hex4 returns the code point of the four hex digits b starts with, or
// -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// Plain consumes a string without escapes and returns its raw contents.
func (d *Scanner) Plain() ([]byte, bool) {
	raw, esc, ok := d.Str()
	return raw, ok && !esc
}

// Text consumes a string and returns its value.
func (d *Scanner) Text() (string, bool) {
	raw, esc, ok := d.Str()
	if !ok {
		return "", false
	}
	if !esc {
		return string(raw), true
	}
	// Str validated every escape.
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			b = append(b, raw[i])
			continue
		}
		i++
		switch c := raw[i]; c {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			b = utf8.AppendRune(b, hex4(raw[i+1:]))
			i += 4
		default:
			b = append(b, c)
		}
	}
	return string(b), true
}

// StringInto decodes a string into p; when it equals one of same, p
// gets that string instead of a copy.
func (d *Scanner) StringInto(p *string, same ...string) bool {
	start := d.i
	raw, esc, ok := d.Str()
	if !ok {
		return false
	}
	if !esc {
		// The usual string: scanned once, copied at most once.
		for _, s := range same {
			if string(raw) == s {
				*p = s
				return true
			}
		}
		*p = internString(raw)
		return true
	}
	d.i = start
	*p, ok = d.Text()
	return ok
}

// TimeInto hands the quoted bytes to time.Time.UnmarshalJSON, as
// encoding/json does, so the instant and the location come out the same.
func (d *Scanner) TimeInto(t *time.Time) bool {
	start := d.i
	if _, ok := d.Plain(); !ok {
		return false
	}
	return t.UnmarshalJSON(d.b[start:d.i]) == nil
}

func (d *Scanner) BoolInto(p *bool) bool {
	switch {
	case d.literal("true"):
		*p = true
	case d.literal("false"):
		*p = false
	default:
		return false
	}
	return true
}

// literal consumes lit if it comes next.
func (d *Scanner) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// digits consumes an integer as JSON writes it, -?(0|[1-9][0-9]*), and
// returns its magnitude; ok is false above math.MaxUint64. A fraction or
// exponent that follows is left for the caller to decline.
func (d *Scanner) digits() (mag uint64, neg, ok bool) {
	neg = d.Eat('-')
	start := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		c := uint64(d.b[d.i] - '0')
		if mag > (math.MaxUint64-c)/10 || d.i > start && d.b[start] == '0' {
			return 0, false, false
		}
		mag = mag*10 + c
		d.i++
	}
	return mag, neg, d.i > start
}

func (d *Scanner) UintInto(p *uint64) bool {
	mag, neg, ok := d.digits()
	*p = mag
	return ok && !neg
}

func (d *Scanner) IntInto(p *int) bool {
	mag, neg, ok := d.digits()
	if !ok || !neg && mag > math.MaxInt || neg && mag > math.MaxInt+1 {
		return false
	}
	*p = int(mag)
	if neg {
		*p = -*p
	}
	return true
}

// value consumes any JSON value and, when build is set, returns it as
// encoding/json decodes into an `any`. Without build it only validates.
func (d *Scanner) value(depth int, build bool) (any, bool) {
	if d.i >= len(d.b) || depth >= maxDepth {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		var m map[string]any
		if build {
			m = make(map[string]any)
		}
		if d.Eat('}') {
			return m, true
		}
		for {
			var k string
			var ok bool
			if build {
				k, ok = d.key()
			} else {
				_, _, ok = d.Str()
			}
			if !ok || !d.Eat(':') {
				return nil, false
			}
			v, ok := d.value(depth+1, build)
			if !ok {
				return nil, false
			}
			if build {
				m[k] = v // a repeated key: the last wins, as in encoding/json
			}
			if !d.Eat(',') {
				return m, d.Eat('}')
			}
		}
	case c == '[':
		d.i++
		var a []any
		if build {
			a = make([]any, 0)
		}
		if d.Eat(']') {
			return a, true
		}
		for {
			v, ok := d.value(depth+1, build)
			if !ok {
				return nil, false
			}
			if build {
				a = append(a, v)
			}
			if !d.Eat(',') {
				return a, d.Eat(']')
			}
		}
	case c == '"':
		if !build {
			_, _, ok := d.Str()
			return nil, ok
		}
		return d.str()
	case d.literal("true"):
		return true, true
	case d.literal("false"):
		return false, true
	case d.literal("null"):
		return nil, true
	}
	return d.number(build)
}

// number consumes a JSON number; built, it is its text as a json.Number,
// as Unmarshal gives it: no digit is lost to a float64.
func (d *Scanner) number(build bool) (any, bool) {
	start := d.i
	d.Eat('-')
	if !d.Eat('0') {
		if d.i >= len(d.b) || d.b[d.i] < '1' || d.b[d.i] > '9' {
			return nil, false
		}
		d.run()
	}
	if d.Eat('.') && !d.run() {
		return nil, false
	}
	if d.Eat('e') || d.Eat('E') {
		if !d.Eat('+') {
			d.Eat('-')
		}
		if !d.run() {
			return nil, false
		}
	}
	if !build {
		return nil, true
	}
	return json.Number(d.b[start:d.i]), true
}

// ValidNumber reports whether s is one JSON number, the text a
// json.Number may hold.
func ValidNumber(s string) bool {
	d := NewScanner([]byte(s))
	_, ok := d.number(false)
	return ok && d.Done()
}

// Unmarshal is json.Unmarshal with numbers decoded as json.Number: a
// payload's numbers keep their exact text (an integer above 2^53, a long
// fraction), so decoding and encoding again gives the same bytes. Like
// json.Unmarshal it refuses trailing data after the value.
func Unmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("invalid character after top-level value")
		}
		return err
	}
	return nil
}

// run consumes one or more decimal digits.
func (d *Scanner) run() bool {
	start := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// key reads an object's key for value: a short one without escapes is
// shared (interned), as object keys repeat from value to value.
func (d *Scanner) key() (string, bool) {
	start := d.i
	raw, esc, ok := d.Str()
	if ok && !esc {
		return internString(raw), true
	}
	d.i = start
	return d.Text()
}

// str reads a string value for value, boxed: a short one without
// escapes comes boxed from the intern table, with no allocation.
func (d *Scanner) str() (any, bool) {
	start := d.i
	raw, esc, ok := d.Str()
	if ok && !esc {
		return internValue(raw), true
	}
	d.i = start
	return d.Text()
}
