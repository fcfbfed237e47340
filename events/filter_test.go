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
	named := nats.Header{"Ledger-Event": []string{"ledger.completed"}}
	require.False(t, f.wantName(named, "Ledger-Event"), "a named write of another transition is dropped undecoded")
	marker := nats.Header{"KV-Operation": []string{"PURGE"}}
	require.True(t, f.wantName(marker, "Ledger-Event"), "a marker has no name header: decode it")
	require.True(t, f.wantEvent(Event{Name: "ledger.expired"}))
	require.False(t, f.wantEvent(Event{Name: "ledger.deleted"}))
	require.True(t, Filter{}.wantName(named, "Ledger-Event"))
	require.True(t, Filter{}.wantEvent(Event{Name: "ledger.deleted"}))
}
