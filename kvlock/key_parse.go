package kvlock

import (
	"strconv"
	"strings"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
)

// KeyKind is what one key of a Locker's bucket is (see ParseKey).
type KeyKind string

// The kinds of a Locker's keys.
const (
	// KeyLock: the lease of a held lock, "<name>.l.<key>".
	KeyLock KeyKind = "lock"
	// KeyLockWaiter: a fair-mode waiter's queue entry, "<name>.q.<key>.<ticket>".
	KeyLockWaiter KeyKind = "lock-waiter"
	// KeyElection: the lease of an election's leader, "<name>.e.<election>".
	KeyElection KeyKind = "election"
	// KeyElectionWaiter: a fair-mode candidate's queue entry,
	// "<name>.eq.<election>.<ticket>".
	KeyElectionWaiter KeyKind = "election-waiter"
	// KeyElectionValue: an election's value record, "<name>.ev.<election>"
	// (data, not a lease).
	KeyElectionValue KeyKind = "election-value"
	// KeyTicket: a queue's ticket key, "<name>.q.<key>.t" or
	// "<name>.eq.<election>.t" (data, not a lease).
	KeyTicket KeyKind = "ticket"
)

// ParsedKey is a key of a Locker's bucket taken apart by ParseKey.
type ParsedKey struct {
	// Name is the Locker's Config.Name.
	Name string
	Kind KeyKind
	// Resource is the lock key as given to Acquire, or the election's
	// name as given to NewElection (unescaped).
	Resource string
	// Ticket is a waiter's ticket (0 for other kinds).
	Ticket uint64
}

// ParseKey reverses the key layout the Locker writes (lockSpec,
// electionSpec): it reports what key is and whose, and false for a key
// that is not one of a Locker's (a plain kvlease key, say). It is the one
// reader of that layout for tools such as the dashboard.
func ParseKey(key string) (ParsedKey, bool) {
	parts := strings.SplitN(key, ".", 3)
	if len(parts) != 3 || kvlease.Name(parts[0]).Validate() != nil || parts[2] == "" {
		return ParsedKey{}, false
	}
	p := ParsedKey{Name: parts[0]}
	rest := parts[2]
	switch parts[1] {
	case kindLock:
		p.Kind, p.Resource = KeyLock, rest
		return p, ValidateKey(rest) == nil
	case kindElection:
		p.Kind = KeyElection
		return electionName(p, rest)
	case kindElectionValue:
		p.Kind = KeyElectionValue
		return electionName(p, rest)
	case kindLockQueue, kindElectionQueue:
	default:
		return ParsedKey{}, false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return ParsedKey{}, false
	}
	owner, last := rest[:i], rest[i+1:]
	switch {
	case "."+last == ticketSuffix:
		p.Kind = KeyTicket
	case len(last) == 20:
		t, err := strconv.ParseUint(last, 10, 64)
		if err != nil {
			return ParsedKey{}, false
		}
		p.Ticket, p.Kind = t, KeyLockWaiter
		if parts[1] == kindElectionQueue {
			p.Kind = KeyElectionWaiter
		}
	default:
		return ParsedKey{}, false
	}
	if parts[1] == kindElectionQueue {
		return electionName(p, owner)
	}
	p.Resource = owner
	return p, ValidateKey(owner) == nil
}

// electionName sets p.Resource from an election's key token.
func electionName(p ParsedKey, tok string) (ParsedKey, bool) {
	name, err := kvx.DecodeToken(tok)
	if err != nil || strings.Contains(tok, ".") {
		return ParsedKey{}, false
	}
	p.Resource = name
	return p, true
}
