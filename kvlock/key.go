package kvlock

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/natscoord/natscoord/internal/kvx"
)

// MaxKeyBytes bounds a lock key (and an election name once escaped).
const MaxKeyBytes = 256

// Key builds a lock key from parts, escaping each one into a single key
// token so that any string (dots, spaces, colons, non-ASCII) can be a part
// and distinct part lists never share a key: bytes outside [A-Za-z0-9_/-]
// become "=HH". Parts are joined with ".", the token separator.
//
//	Key("conv", "42")        == "conv.42"
//	Key("tenant a", "x.y")   == "tenant=20a.x=2Ey"
//
// It is the generic form of "ws:conv:{id}:lock"-style conventions: the
// first part names the kind of resource, the rest identify it. An empty
// part yields a key ValidateKey (and therefore Acquire) rejects.
func Key(parts ...string) string {
	enc := make([]string, len(parts))
	for i, p := range parts {
		enc[i] = kvx.EncodeToken(p)
	}
	return strings.Join(enc, ".")
}

// ValidateKey reports whether key follows the key convention: 1 to
// MaxKeyBytes bytes, dot-separated tokens, each a non-empty run of
// [A-Za-z0-9_/=-]. Wildcards ("*", ">"), spaces and empty tokens are
// refused because the key becomes part of a NATS subject. Key always
// produces a valid key from non-empty parts.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if len(key) > MaxKeyBytes {
		return fmt.Errorf("%w: %d bytes, above MaxKeyBytes %d", ErrInvalidKey, len(key), MaxKeyBytes)
	}
	tok := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '.':
			if tok == 0 {
				return fmt.Errorf("%w: %q has an empty token at byte %d", ErrInvalidKey, key, i)
			}
			tok = 0
		case keyByte(c):
			tok++
		default:
			return fmt.Errorf("%w: %q has byte %q at %d (allowed: A-Z a-z 0-9 _ / = - and '.' between tokens; use Key to escape)",
				ErrInvalidKey, key, c, i)
		}
	}
	if tok == 0 {
		return fmt.Errorf("%w: %q ends with an empty token", ErrInvalidKey, key)
	}
	return nil
}

func keyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '/' || c == '_' || c == '='
}

// spec names the bucket keys behind one lock (or one election):
//
//	lock k:      lease "<name>.l.<k>"   queue "<name>.q.<k>.<ticket>"   ticket "<name>.q.<k>.t"
//	election e:  lease "<name>.e.<e>"   queue "<name>.eq.<e>.<ticket>"  ticket "<name>.eq.<e>.t"
//	             value "<name>.ev.<e>"
//
// The kind token keeps locks, queues and elections apart whatever the
// user's key is, and a queue entry is exactly one token (20 digits) after
// its prefix, so "<queue>.*" never matches the entries of a longer key.
// The ticket key sits under the queue's prefix too (its last token "t" is
// never 20 digits, so it is never taken for an entry), so the queue's
// watch sees every ticket drawn and can be synced to one.
type spec struct {
	key    string // the user's key or election name, for logs and events
	lease  string
	queue  string // prefix of queue entries
	ticket string
}

// IsDataKey reports whether key, a key of a Locker's bucket, is one of
// kvlock's keys that hold data rather than a lease: a queue's ticket
// ("<name>.q.<k>.t", "<name>.eq.<e>.t") or an election's value record
// ("<name>.ev.<e>"). Tools that list the bucket's leases (natscoord lease
// ls) leave these out instead of showing them as corrupt leases.
func IsDataKey(key string) bool {
	p, ok := ParseKey(key)
	return ok && (p.Kind == KeyTicket || p.Kind == KeyElectionValue)
}

// The kind tokens that follow the Locker's name in its keys, and the
// suffix of a queue's ticket key: the one spelling of the layout above,
// for the specs that build keys and ParseKey that reads them.
const (
	kindLock          = "l"
	kindLockQueue     = "q"
	kindElection      = "e"
	kindElectionQueue = "eq"
	kindElectionValue = "ev"
	ticketSuffix      = ".t"
)

func lockSpec(name, key string) spec {
	return newSpec(key, name+"."+kindLock+"."+key, name+"."+kindLockQueue+"."+key)
}

// lockSpec is the spec of key's lock; only fair mode has a queue, so in
// barging mode (the default) the queue's key names are not built (two
// allocations an acquisition spared).
func (l *Locker) lockSpec(key string) spec {
	if l.cfg.Fair {
		return lockSpec(l.cfg.Name, key)
	}
	return spec{key: key, lease: l.cfg.Name + "." + kindLock + "." + key}
}

func electionSpec(name, tok, election string) spec {
	return newSpec(election, name+"."+kindElection+"."+tok, name+"."+kindElectionQueue+"."+tok)
}

// electionValueKey is the key of election tok's value record.
func electionValueKey(name, tok string) string { return name + "." + kindElectionValue + "." + tok }

func newSpec(key, lease, queue string) spec {
	return spec{key: key, lease: lease, queue: queue, ticket: queue + ticketSuffix}
}

// entryKey is the queue entry of ticket t: zero-padded so the entries of
// a queue sort by ticket as strings too.
func (s spec) entryKey(t uint64) string {
	return s.queue + "." + fmt.Sprintf("%020d", t)
}

// ticketOf parses the ticket of a queue entry key of s.
func (s spec) ticketOf(key string) (uint64, bool) {
	rest, ok := strings.CutPrefix(key, s.queue)
	if !ok || len(rest) != 21 || rest[0] != '.' {
		return 0, false
	}
	t, err := strconv.ParseUint(rest[1:], 10, 64)
	return t, err == nil
}
