package worker

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/natscoord/natscoord/internal/kvx"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
)

// RateLimit bounds the starts of a kind's or a group's tasks across all
// workers of a ledger: at most N in any window of Period
// (Config.RateLimits; the package documentation, "Rate limits").
type RateLimit struct {
	// Kind or Group names the tasks limited; exactly one is set. A
	// kind's limit counts every task of the kind, a group's
	// (kvledger.TaskState.Group) every task of the group, whatever its
	// kind.
	Kind, Group string
	// N is how many may start in any window of Period:
	// 1..kvlease.MaxSemaphoreSlots.
	N int
	// Period is a whole number of seconds (the server counts a key's TTL
	// in whole seconds), kvlease.MinTTL (1s) to kvlease.MaxTTL (24h).
	Period time.Duration
}

// String is the limit as `natscoord work` takes it: "kind resize: 3/2s".
func (rl RateLimit) String() string {
	what, name := "kind", rl.Kind
	if rl.Group != "" {
		what, name = "group", rl.Group
	}
	return fmt.Sprintf("%s %q: %d/%v", what, name, rl.N, rl.Period)
}

// A rate limit is N tokens in the lease bucket, the way a group limit is
// N slots (groups.go): token i of the limit is the key
// "<prefix>r.k.<token of the kind>.<i>" (a group's: "r.g."), taken by a
// create-if-absent write with a per-key TTL of Period and never released
// or renewed (kvlease.Guard.Abandon). The server expires it Period after
// it stored the write, and the lease watch, which delivers every key
// under the prefix, reports that expiry: the tasks waiting for a token
// are woken by push, and no process compares its clock with another's.
// Per-record lease tokens contain no dot (kvx.EncodeToken), so "r." keys
// never meet them.
const rateInfix = "r."

// rateScope names a rate limit: a kind's, or a group's.
type rateScope struct {
	byGroup bool
	name    string
}

func (s rateScope) infix() string {
	if s.byGroup {
		return rateInfix + "g."
	}
	return rateInfix + "k."
}

// Validate reports what makes rl a limit New refuses (ErrInvalidConfig),
// or nil.
func (rl RateLimit) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: rate limit %v: %s", ErrInvalidConfig, rl, fmt.Sprintf(format, args...))
	}
	switch {
	case (rl.Kind == "") == (rl.Group == ""):
		return bad("set exactly one of Kind and Group")
	case len(rl.Group) > kvledger.MaxGroupBytes || !utf8.ValidString(rl.Group):
		return bad("the group must be 1..%d bytes of UTF-8", kvledger.MaxGroupBytes)
	case len(rl.Kind) > kvledger.MaxKindBytes || !utf8.ValidString(rl.Kind):
		return bad("the kind must be 1..%d bytes of UTF-8", kvledger.MaxKindBytes)
	case rl.N < 1 || rl.N > kvlease.MaxSemaphoreSlots:
		return bad("N outside 1..%d", kvlease.MaxSemaphoreSlots)
	case rl.Period%time.Second != 0:
		return bad("the period must be whole seconds (the server's TTL precision)")
	}
	if err := kvlease.ValidateTTL(rl.Period); err != nil {
		return bad("period: %v", err)
	}
	return nil
}

// validRateLimits checks limits (Config.withDefaults): each valid, at
// most one per kind and one per group.
func validRateLimits(limits []RateLimit) error {
	seen := make(map[rateScope]bool, len(limits))
	for _, rl := range limits {
		if err := rl.Validate(); err != nil {
			return err
		}
		s := rateScope{byGroup: rl.Group != "", name: rl.Kind + rl.Group}
		if seen[s] {
			return fmt.Errorf("%w: rate limit %v: a second limit for the same %s", ErrInvalidConfig, rl, map[bool]string{false: "kind", true: "group"}[s.byGroup])
		}
		seen[s] = true
	}
	return nil
}

// newRates returns the rate limits of limits (validated), or
// ErrInvalidConfig when a token key is longer than
// kvlease.DefaultMaxKeyBytes.
func newRates(prefix string, limits []RateLimit) (map[rateScope]*group, error) {
	rs := make(map[rateScope]*group, len(limits))
	for _, rl := range limits {
		s := rateScope{byGroup: rl.Group != "", name: rl.Kind + rl.Group}
		g, err := newLimit(s.name, prefix+s.infix()+kvx.EncodeToken(s.name)+".", rl.N, rl.Period, "RateLimits: "+rl.String())
		if err != nil {
			return nil, err
		}
		rs[s] = g
	}
	return rs, nil
}

// ratesOf returns the rate limits over a task of kind and group (its
// kind's, its group's; nil where none).
func (ix *index) ratesOf(kind, group string) (rs [2]*group) {
	if len(ix.rates) == 0 {
		return rs
	}
	rs[0] = ix.rates[rateScope{name: kind}]
	if group != "" {
		rs[1] = ix.rates[rateScope{byGroup: true, name: group}]
	}
	return rs
}

// rateAheadLocked reports whether a claim of it, of kind, now would be a
// claim ahead (it would wait for a handler slot) of a task under a rate
// limit. Such a task is not claimed ahead: its token counts its start, so
// its handler must start as soon as its claim lands, not whenever a slot
// frees up. It waits in its place, and nothing is claimed ahead past it
// meanwhile (as for a task's last attempt, lastAttemptLocked).
func (w *Worker) rateAheadLocked(kind string, it readyItem) bool {
	if len(w.ix.rates) == 0 || w.busy < w.cfg.Concurrency {
		return false
	}
	group := ""
	if e := w.ix.recs[it.key]; e != nil {
		group = e.group
	}
	rs := w.ix.ratesOf(kind, group)
	return (rs[0] != nil || rs[1] != nil) && w.waitsLocked(it)
}

// rateStartLocked notes r's rate limits, counted in their taking until
// takeTokens tries them (or r ends first).
func (w *Worker) rateStartLocked(r *run) {
	group := ""
	if e := w.ix.recs[r.key]; e != nil {
		group = e.group
	}
	r.rates = w.ix.ratesOf(r.kind, group)
	for _, g := range r.rates {
		if g != nil {
			g.taking++
		}
	}
}

// takeTokens takes a token of each rate limit over r's task, just before
// its claim: false when one has none free (r's task waits, parked, for
// the lease watch to report a token's expiry, and no attempt is counted)
// or on an error (the key is looked at again after the claims' pause). A
// token taken is spent whatever follows: a claim that then fails, or a
// second limit without a token, does not give it back.
func (w *Worker) takeTokens(r *run) bool {
	for i, g := range r.rates {
		if g == nil {
			continue
		}
		r.rates[i] = nil // take settles g.taking
		if _, ok := w.take(r, g); !ok {
			return false
		}
	}
	return true
}

// untakeTokensLocked gives back what r counted in taking for the tokens
// it never tried (its attempt ended before takeTokens).
func (r *run) untakeTokensLocked() {
	for i, g := range r.rates {
		if g != nil {
			g.taking--
			r.rates[i] = nil
		}
	}
}

// onToken applies one change of a rate limit's token key from the lease
// watch; rest is the key after the "r." infix.
func (w *Worker) onToken(key, rest string, live bool, rev uint64) {
	var s rateScope
	switch {
	case len(rest) > 2 && rest[:2] == "k.":
	case len(rest) > 2 && rest[:2] == "g.":
		s.byGroup = true
	default:
		return
	}
	name, ok := limitName(rest[2:])
	if !ok {
		return
	}
	s.name = name
	w.mu.Lock()
	defer w.mu.Unlock()
	w.limitKeyLocked(w.ix.rates[s], key, live, rev)
}
