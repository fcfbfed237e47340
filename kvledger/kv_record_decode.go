package kvledger

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/natscoord/natscoord/events"
)

// decodeRecordFast fills r from value without reflection when value has
// the shape appendRecord writes, and reports whether it did. The worker's
// bucket watch decodes every record write (three per task), where
// json.Unmarshal into kvRecord was a large share of the runtime's CPU.
//
// The result is exactly what json.Unmarshal into a zero kvRecord gives
// (FuzzDecodeRecordFast checks it): the same strings, times parsed by
// time.Time.UnmarshalJSON from the same bytes, Task as the generic JSON
// value (map[string]any, []any, float64, string, bool, nil), Result as a
// copy of the same raw bytes. ok is false for anything it does not
// reproduce exactly, and the caller then runs json.Unmarshal on a fresh
// kvRecord, so what decodes, and how, never depends on this file. It
// declines: whitespace anywhere, a key that is not exactly one of the
// record's lowercase field names (encoding/json would also match keys
// case-insensitively and skip unknown ones), a repeated key, null as a
// field value, a value of the wrong JSON type, integers with a fraction,
// an exponent or out of range, strings with invalid UTF-8 or a \u escape
// of a surrogate half, an empty needs array, a Task number that float64
// cannot hold, values nested deeper than maxDecodeDepth, and trailing
// bytes.
func decodeRecordFast(value []byte, r *kvRecord) bool {
	d := recordDecoder{b: value}
	if !d.eat('{') {
		return false
	}
	if d.eat('}') {
		return d.i == len(d.b)
	}
	var seen uint32
	for {
		name, esc, ok := d.str()
		if !ok || esc || !d.eat(':') {
			return false
		}
		bit, ok := d.field(name, r)
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if d.eat(',') {
			continue
		}
		return d.eat('}') && d.i == len(d.b)
	}
}

// field decodes the value of the field called name into r and returns
// the field's bit (to refuse repeats).
func (d *recordDecoder) field(name []byte, r *kvRecord) (uint32, bool) {
	s := &r.TaskState
	switch string(name) {
	case "key":
		return 1 << 0, d.stringInto((*string)(&s.Key))
	case "status":
		raw, ok := d.plain()
		if ok {
			s.Status = statusOf(raw)
		}
		return 1 << 1, ok
	case "sequence":
		return 1 << 2, d.uintInto((*uint64)(&s.Sequence))
	case "owner":
		return 1 << 3, d.stringInto((*string)(&s.Owner))
	case "fence":
		return 1 << 4, d.uintInto((*uint64)(&s.Fence))
	case "lease_until":
		return 1 << 5, d.timeInto(&s.LeaseUntil)
	case "needs":
		return 1 << 6, d.needs(&s.Needs)
	case "blocked_by":
		return 1 << 7, d.stringInto((*string)(&s.BlockedBy))
	case "task":
		if d.i < len(d.b) && d.b[d.i] == 'n' {
			return 0, false // null clears Task; leave it to encoding/json
		}
		var ok bool
		s.Task, ok = d.value(0, true)
		return 1 << 8, ok
	case "created_by":
		return 1 << 9, d.stringInto((*string)(&s.CreatedBy))
	case "created_at":
		return 1 << 10, d.timeInto(&s.CreatedAt)
	case "updated_by":
		// Usually the creator or the owner: share their string.
		return 1 << 11, d.stringInto((*string)(&s.UpdatedBy), string(s.Owner), string(s.CreatedBy))
	case "updated_at":
		return 1 << 12, d.timeInto(&s.UpdatedAt)
	case "last_event":
		raw, ok := d.plain()
		if ok {
			s.LastEvent = eventOf(raw)
		}
		return 1 << 13, ok
	case "kind":
		return 1 << 14, d.stringInto(&s.Kind)
	case "run_at":
		return 1 << 15, d.timeInto(&s.RunAt)
	case "attempts":
		return 1 << 16, d.intInto(&s.Attempts)
	case "lease":
		return 1 << 17, d.stringInto(&s.Lease)
	case "max_attempts":
		return 1 << 18, d.intInto(&s.MaxAttempts)
	case "last_error":
		return 1 << 19, d.stringInto(&s.LastError)
	case "cancelled":
		return 1 << 20, d.boolInto(&s.Cancelled)
	case "result":
		start := d.i
		if _, ok := d.value(0, false); !ok || d.b[start] == 'n' {
			return 0, false
		}
		s.Result = append(json.RawMessage(nil), d.b[start:d.i]...)
		return 1 << 21, true
	case "rev":
		return 1 << 22, d.uintInto(&r.Rev)
	case "ins":
		return 1 << 23, d.boolInto(&r.Ins)
	}
	return 0, false
}

// statusOf and eventOf return the constant for the common values, which
// saves an allocation per record; any other text is copied.
func statusOf(raw []byte) Status {
	for _, s := range [...]Status{StatusPending, StatusClaimed, StatusCompleted, StatusFailed, StatusBlocked} {
		if string(raw) == string(s) {
			return s
		}
	}
	return Status(raw)
}

func eventOf(raw []byte) events.Name {
	for _, e := range [...]events.Name{AdmittedEvent, ClaimedEvent, RenewedEvent, ReleasedEvent, TakenOverEvent, CompletedEvent,
		BlockedEvent, RetriedEvent, ReopenedEvent, UnblockedEvent, CancelledEvent, DeletedEvent} {
		if string(raw) == string(e) {
			return e
		}
	}
	return events.Name(raw)
}

// maxDecodeDepth bounds the nesting the fast path follows in Task and
// Result; deeper values go to encoding/json, which allows far more.
const maxDecodeDepth = 32

// recordDecoder reads b from offset i.
type recordDecoder struct {
	b []byte
	i int
}

// eat consumes c if it is the next byte.
func (d *recordDecoder) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str consumes a JSON string and returns its raw contents (between the
// quotes) and whether they hold escapes. It validates as encoding/json's
// scanner does (no control bytes, only the defined escapes) and declines
// invalid UTF-8 and escaped surrogate halves, which encoding/json
// replaces or pairs.
func (d *recordDecoder) str() (raw []byte, esc, ok bool) {
	if !d.eat('"') {
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

// plainByte marks the bytes str passes over without a second look:
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

// plain consumes a string without escapes and returns its raw contents.
func (d *recordDecoder) plain() ([]byte, bool) {
	raw, esc, ok := d.str()
	return raw, ok && !esc
}

// text consumes a string and returns its value.
func (d *recordDecoder) text() (string, bool) {
	raw, esc, ok := d.str()
	if !ok {
		return "", false
	}
	if !esc {
		return string(raw), true
	}
	// str validated every escape.
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

// stringInto decodes a string into p; when it equals one of same, p
// gets that string instead of a copy.
func (d *recordDecoder) stringInto(p *string, same ...string) bool {
	start := d.i
	if raw, esc, ok := d.str(); ok && !esc {
		for _, s := range same {
			if string(raw) == s {
				*p = s
				return true
			}
		}
	}
	d.i = start
	var ok bool
	*p, ok = d.text()
	return ok
}

// timeInto hands the quoted bytes to time.Time.UnmarshalJSON, as
// encoding/json does, so the instant and the location come out the same.
func (d *recordDecoder) timeInto(t *time.Time) bool {
	start := d.i
	if _, ok := d.plain(); !ok {
		return false
	}
	return t.UnmarshalJSON(d.b[start:d.i]) == nil
}

func (d *recordDecoder) boolInto(p *bool) bool {
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
func (d *recordDecoder) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// digits consumes an integer as JSON writes it, -?(0|[1-9][0-9]*), and
// returns its magnitude; ok is false above math.MaxUint64. A fraction or
// exponent that follows is left for the caller to decline.
func (d *recordDecoder) digits() (mag uint64, neg, ok bool) {
	neg = d.eat('-')
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

func (d *recordDecoder) uintInto(p *uint64) bool {
	mag, neg, ok := d.digits()
	*p = mag
	return ok && !neg
}

func (d *recordDecoder) intInto(p *int) bool {
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

func (d *recordDecoder) needs(p *[]IdempotencyKey) bool {
	if !d.eat('[') || d.eat(']') {
		return false // encoding/json makes [] an empty non-nil slice
	}
	for {
		k, ok := d.text()
		if !ok {
			return false
		}
		*p = append(*p, IdempotencyKey(k))
		if !d.eat(',') {
			return d.eat(']')
		}
	}
}

// value consumes any JSON value and, when build is set, returns it as
// encoding/json decodes into an `any`. Without build it only validates
// (the raw Result).
func (d *recordDecoder) value(depth int, build bool) (any, bool) {
	if d.i >= len(d.b) || depth >= maxDecodeDepth {
		return nil, false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		var m map[string]any
		if build {
			m = make(map[string]any)
		}
		if d.eat('}') {
			return m, true
		}
		for {
			var k string
			var ok bool
			if build {
				k, ok = d.text()
			} else {
				_, _, ok = d.str()
			}
			if !ok || !d.eat(':') {
				return nil, false
			}
			v, ok := d.value(depth+1, build)
			if !ok {
				return nil, false
			}
			if build {
				m[k] = v // a repeated key: the last wins, as in encoding/json
			}
			if !d.eat(',') {
				return m, d.eat('}')
			}
		}
	case c == '[':
		d.i++
		var a []any
		if build {
			a = make([]any, 0)
		}
		if d.eat(']') {
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
			if !d.eat(',') {
				return a, d.eat(']')
			}
		}
	case c == '"':
		if !build {
			_, _, ok := d.str()
			return nil, ok
		}
		return d.text()
	case d.literal("true"):
		return true, true
	case d.literal("false"):
		return false, true
	case d.literal("null"):
		return nil, true
	}
	return d.number(build)
}

// number consumes a JSON number; built, it is the float64 encoding/json
// gives, and a number float64 cannot hold is declined (an error there).
func (d *recordDecoder) number(build bool) (any, bool) {
	start := d.i
	d.eat('-')
	if !d.eat('0') {
		if d.i >= len(d.b) || d.b[d.i] < '1' || d.b[d.i] > '9' {
			return nil, false
		}
		d.run()
	}
	if d.eat('.') && !d.run() {
		return nil, false
	}
	if d.eat('e') || d.eat('E') {
		if !d.eat('+') {
			d.eat('-')
		}
		if !d.run() {
			return nil, false
		}
	}
	if !build {
		return nil, true
	}
	f, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	return f, err == nil
}

// run consumes one or more decimal digits.
func (d *recordDecoder) run() bool {
	start := d.i
	for d.i < len(d.b) && '0' <= d.b[d.i] && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}
