package events

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// A filter by name judges a write by its header before decoding it, and
// a write without the header (the server's expiry and purge markers,
// named only once decoded) by its decoded name: asking for expiries
// alone delivers them.
func TestFilterByNameJudgesMarkersOnceDecoded(t *testing.T) {
	f := Filter{Names: []Name{"ledger.expired"}}
	src := Source{NameHeader: "Ledger-Event", StatusHeader: "Ledger-Status"}
	named := nats.Header{"Ledger-Event": []string{"ledger.completed"}}
	require.False(t, f.wantHeader(named, src), "a named write of another transition is dropped undecoded")
	marker := nats.Header{"KV-Operation": []string{"PURGE"}}
	require.True(t, f.wantHeader(marker, src), "a marker has no name header: decode it")
	require.True(t, f.wantEvent(Event{Name: "ledger.expired"}))
	require.False(t, f.wantEvent(Event{Name: "ledger.deleted"}))
	require.True(t, Filter{}.wantHeader(named, src))
	require.True(t, Filter{}.wantEvent(Event{Name: "ledger.deleted"}))
}

// A filter by status judges a write by its status header before decoding
// it; a write stored without one (before its writer set it, or a marker)
// is judged by its decoded status. With a name as well, both must match.
func TestFilterByStatus(t *testing.T) {
	src := Source{NameHeader: "Ledger-Event", StatusHeader: "Ledger-Status",
		Renamed: map[Name]Name{"ledger.failed": "ledger.completed"}}
	failures := Filter{Names: []Name{"ledger.completed"}, Statuses: []string{"failed"}}
	hdr := func(name, status string) nats.Header {
		h := nats.Header{"Ledger-Event": []string{name}}
		if status != "" {
			h.Set("Ledger-Status", status)
		}
		return h
	}
	require.True(t, failures.wantHeader(hdr("ledger.completed", "failed"), src))
	require.False(t, failures.wantHeader(hdr("ledger.completed", "completed"), src), "a success is dropped undecoded")
	require.False(t, failures.wantHeader(hdr("ledger.cancelled", "failed"), src), "another transition is dropped undecoded")
	require.True(t, failures.wantHeader(hdr("ledger.failed", ""), src), "an old name reads as today's; no status header: decode it")
	require.True(t, failures.wantEvent(Event{Name: "ledger.completed", Status: "failed"}))
	require.False(t, failures.wantEvent(Event{Name: "ledger.completed", Status: "completed"}))
	// The header is read only when the source names one.
	require.True(t, Filter{Statuses: []string{"failed"}}.wantHeader(hdr("ledger.completed", "completed"), Source{NameHeader: "Ledger-Event"}))
	// A filter on a name the source writes no more is refused, not left
	// to match nothing.
	require.ErrorIs(t, src.checkFilter(Filter{Names: []Name{"ledger.failed"}}), ErrInvalidConfig)
	require.NoError(t, src.checkFilter(failures))
}
