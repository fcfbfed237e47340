package events

import "strings"

// Name identifies what happened, for example "ledger.claimed": a
// transition's name, carried in the writer's name header (Source's
// NameHeader, kvledger.EventHeader). It is made of dot-separated tokens
// without spaces or wildcards, so it reads as a subject would.
type Name string

// String returns the name as a string.
func (n Name) String() string { return string(n) }

// Valid reports whether n is well formed: non-empty, no empty token, no
// whitespace and no wildcard token.
func (n Name) Valid() bool {
	s := string(n)
	if s == "" || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return false
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "*" || tok == ">" {
			return false
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= ' ' || c == 0x7f:
			return false
		}
	}
	return true
}
