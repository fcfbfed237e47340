package kvlease

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// secretBytes is the size of a guard's owner secret.
const secretBytes = 32

type secret [secretBytes]byte

func newSecret() secret {
	var s secret
	_, _ = rand.Read(s[:]) // crypto/rand.Read never fails (Go 1.24+)
	return s
}

// hash is what the bucket stores: reading the bucket reveals who holds a
// lease but not the secret a transfer token needs.
func (s secret) hash() string {
	h := sha256.Sum256(s[:])
	var x [2 * sha256.Size]byte
	hex.Encode(x[:], h[:])
	return string(x[:])
}

// Holder describes the process holding a lease, as stored in its value.
type Holder struct {
	// ID is the holder's public id (Config.Holder).
	ID string `json:"holder"`
	// Host and PID locate the process.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Info is what the holder says of itself in this lease, when it
	// acquired it with TryAcquireKeyInfo (at most MaxInfoBytes), such as
	// the task kinds a worker handles. Informational only, like Acquired.
	Info string `json:"info,omitempty"`
	// Acquired is the holder's clock when it acquired (or restored) the
	// lease. Informational only: no process judges a lease by it.
	Acquired time.Time `json:"acquired"`
	// TTL is the lease's requested TTL in milliseconds.
	TTLMillis int64 `json:"ttl_ms"`
	// OwnerHash is the hex SHA-256 of the owner secret (never the secret).
	OwnerHash string `json:"owner"`
	// Revision is the lease key's revision when read (not stored).
	Revision uint64 `json:"-"`
	// Expires is when the server expires the lease unless it is renewed
	// first, read with it (not stored): the server's time of the lease's
	// last write plus its TTL as the server counts it (whole seconds,
	// rounded up). It is for showing, measured on the server's clock; no
	// process judges a lease by it.
	Expires time.Time `json:"-"`
}

// TTL returns the lease's requested TTL.
func (h Holder) TTL() time.Duration { return time.Duration(h.TTLMillis) * time.Millisecond }

// The value is JSON (readable with `nats kv get`, decoded by any version
// through decodeValue), but it is written by appending to a prefix that
// encoding/json produced once per manager: reflection-based Marshal was
// the largest client-side cost of an uncontended acquisition
// (BENCHMARKS.md). The output is byte-identical to json.Marshal(Holder).
const (
	ownerField = `,"owner":"`
	ttlField   = `,"ttl_ms":`
	// tailLen is the fixed part of the value's end: `,"owner":"` + 64
	// hex digits + `"}`.
	tailLen = len(ownerField) + 2*sha256.Size + len(`"}`)
)

// valuePrefix is the constant head of this process's lease values:
// holder, host and pid.
func valuePrefix(holder, host string, pid int) []byte {
	id, h := jsonString(holder), jsonString(host)
	p := make([]byte, 0, 64+len(id)+len(h))
	p = append(p, `{"holder":`...)
	p = append(p, id...)
	p = append(p, `,"host":`...)
	p = append(p, h...)
	p = append(p, `,"pid":`...)
	return strconv.AppendInt(p, int64(pid), 10)
}

// jsonString is s as encoding/json writes a string.
func jsonString(s string) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("kvlease: encoding a string cannot fail: %v", err))
	}
	return b
}

// encodeValue writes a lease value acquired (or restored) at the given
// time on this process's clock; info is the holder's Info ("" for none).
func (m *Manager) encodeValue(at time.Time, ttl time.Duration, ownerHash, info string) []byte {
	return appendValue(make([]byte, 0, len(m.prefix)+112+len(info)+len(ownerHash)), m.prefix, info, at.UTC(), ttl, ownerHash)
}

func appendValue(b, prefix []byte, info string, acquired time.Time, ttl time.Duration, ownerHash string) []byte {
	b = append(b, prefix...)
	if info != "" {
		b = append(b, `,"info":`...)
		b = append(b, jsonString(info)...)
	}
	b = append(b, `,"acquired":"`...)
	b = acquired.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = append(b, ttlField...)
	b = strconv.AppendInt(b, ttl.Milliseconds(), 10)
	b = append(b, ownerField...)
	b = append(b, ownerHash...) // hex digits: nothing to escape
	return append(b, `"}`...)
}

// valueTail reads the TTL and owner hash from the end of a value laid out
// as appendValue writes it, without decoding the whole value (waiters look
// at every holder's value on every acquisition they see). ok is false for
// any other layout; callers then fall back to decodeValue. A JSON string
// cannot contain the unescaped quotes of this tail, so a match is the
// value's last ttl_ms and owner members, the ones encoding/json keeps.
func valueTail(b []byte) (ttlMillis int64, owner []byte, ok bool) {
	if len(b) < tailLen || !bytes.HasSuffix(b, []byte(`"}`)) {
		return 0, nil, false
	}
	tail := b[len(b)-tailLen:]
	if !bytes.HasPrefix(tail, []byte(ownerField)) {
		return 0, nil, false
	}
	owner = tail[len(ownerField) : len(ownerField)+2*sha256.Size]
	for _, c := range owner {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, nil, false
		}
	}
	head := b[:len(b)-tailLen]
	i := len(head)
	for i > 0 && head[i-1] >= '0' && head[i-1] <= '9' {
		i--
	}
	if i == len(head) || len(head)-i > 18 || !bytes.HasSuffix(head[:i], []byte(ttlField)) {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(head[i:]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return n, owner, true
}

// valueHolderID reads the holder id from the head of a value laid out as
// appendValue writes it (its tail checked by valueTail), when the id
// needed no escaping: {"holder":"<id>","host":... . ok is false for any
// other value; callers then fall back to decodeValue.
func valueHolderID(b []byte) (string, bool) {
	if _, _, ok := valueTail(b); !ok {
		return "", false
	}
	rest, ok := bytes.CutPrefix(b, []byte(`{"holder":"`))
	if !ok {
		return "", false
	}
	for i, c := range rest {
		switch {
		case c == '"':
			if !bytes.HasPrefix(rest[i+1:], []byte(`,"host":`)) {
				return "", false
			}
			return string(rest[:i]), true
		case c == '\\' || c < 0x20:
			return "", false // escaped: encoding/json reads it
		}
	}
	return "", false
}

// valueTTL is the TTL a stored value asks for, if it names one.
func valueTTL(b []byte) (time.Duration, bool) {
	if ms, _, ok := valueTail(b); ok {
		return time.Duration(ms) * time.Millisecond, true
	}
	h, err := decodeValue(b)
	if err != nil {
		return 0, false
	}
	return h.TTL(), true
}

// ownedBy reports whether a stored value names ownerHash as its owner.
// The tail settles the common answer (someone else holds it) without a
// decode; a yes is always confirmed by decoding the whole value, so
// garbage that merely ends like one of our values never counts as owned.
func ownedBy(value []byte, ownerHash string) bool {
	if _, owner, ok := valueTail(value); ok && string(owner) != ownerHash {
		return false
	}
	h, err := decodeValue(value)
	if err != nil || len(h.OwnerHash) != len(ownerHash) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(h.OwnerHash), []byte(ownerHash)) == 1
}
