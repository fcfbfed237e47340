package kvlock

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
)

// ParseKey reads back every key the layout's builders write.
func TestParseKeyReversesTheLayout(t *testing.T) {
	ls := lockSpec("app", Key("orders", "4.2"))
	es := electionSpec("app", kvx.EncodeToken("leader of things"), "leader of things")
	for _, c := range []struct {
		key  string
		want ParsedKey
	}{
		{ls.lease, ParsedKey{Name: "app", Kind: KeyLock, Resource: "orders.4=2E2"}},
		{ls.entryKey(7), ParsedKey{Name: "app", Kind: KeyLockWaiter, Resource: "orders.4=2E2", Ticket: 7}},
		{ls.ticket, ParsedKey{Name: "app", Kind: KeyTicket, Resource: "orders.4=2E2"}},
		{es.lease, ParsedKey{Name: "app", Kind: KeyElection, Resource: "leader of things"}},
		{es.entryKey(9), ParsedKey{Name: "app", Kind: KeyElectionWaiter, Resource: "leader of things", Ticket: 9}},
		{es.ticket, ParsedKey{Name: "app", Kind: KeyTicket, Resource: "leader of things"}},
		{electionValueKey("app", kvx.EncodeToken("x.y")), ParsedKey{Name: "app", Kind: KeyElectionValue, Resource: "x.y"}},
	} {
		got, ok := ParseKey(c.key)
		require.True(t, ok, c.key)
		require.Equal(t, c.want, got, c.key)
		require.Equal(t, got.Kind == KeyTicket || got.Kind == KeyElectionValue, IsDataKey(c.key), c.key)
	}
	for _, k := range []string{"jobs.j-1", "jobs.a.b", "app.l", "app.x.y", "app.q.k", "app.q.k.123", "a b.l.k", "app.e.a.b", "app.l.a..b"} {
		_, ok := ParseKey(k)
		require.False(t, ok, k)
	}
}

// ParseKey never panics, and what it accepts is exactly what the
// layout's builders write for the parts it returns.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"app.l.orders.42", "app.q.k.00000000000000000007", "app.eq.x=20y.t", "app.e.a", "app.ev.b", "jobs.j", "a.q..t", "x.e.=zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		p, ok := ParseKey(key)
		if !ok {
			return
		}
		var rebuilt string
		switch p.Kind {
		case KeyLock:
			rebuilt = lockSpec(p.Name, p.Resource).lease
		case KeyLockWaiter:
			rebuilt = lockSpec(p.Name, p.Resource).entryKey(p.Ticket)
		case KeyElection:
			rebuilt = electionSpec(p.Name, kvx.EncodeToken(p.Resource), p.Resource).lease
		case KeyElectionWaiter:
			rebuilt = electionSpec(p.Name, kvx.EncodeToken(p.Resource), p.Resource).entryKey(p.Ticket)
		case KeyElectionValue:
			rebuilt = electionValueKey(p.Name, kvx.EncodeToken(p.Resource))
		case KeyTicket:
			return // a lock's or an election's: both spellings are checked above
		}
		if rebuilt != key {
			t.Fatalf("ParseKey(%q) = %+v, which builds %q", key, p, rebuilt)
		}
	})
}
