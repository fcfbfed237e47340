package events

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

func prevHdr(prev uint64) nats.Header {
	return nats.Header{"Prev": []string{strconv.FormatUint(prev, 10)}}
}

// TestGapTracker: a key's write naming a previous revision the tracker did
// not deliver is a gap; a first write, a write naming the revision just
// delivered, a redelivery, and a key whose previous write came before the
// session started are not.
func TestGapTracker(t *testing.T) {
	g := newGapTracker(10, "Prev")
	_, gap := g.see("b", "a", 10, prevHdr(0))
	require.False(t, gap, "first write")
	_, gap = g.see("b", "a", 12, prevHdr(10))
	require.False(t, gap, "follows what was delivered")
	_, gap = g.see("b", "a", 12, prevHdr(10))
	require.False(t, gap, "redelivery")
	got, gap := g.see("b", "a", 20, prevHdr(15))
	require.True(t, gap)
	require.Equal(t, Gap{Source: "b", Key: "a", After: 12, Through: 15, Next: 20}, got)
	_, gap = g.see("b", "old", 21, prevHdr(5))
	require.False(t, gap, "previous write before the session: delivered by an earlier one")
	got, gap = g.see("b", "new", 22, prevHdr(11))
	require.True(t, gap, "previous write due in this session, never seen")
	require.Equal(t, uint64(0), got.After)
	_, gap = g.see("b", "marker", 23, nats.Header{})
	require.False(t, gap, "a server marker names no previous revision")
	require.Contains(t, got.Error(), `key "new"`)
}

// TestGapString: a gap after a delivered revision names it; one with
// nothing delivered before it (After 0) does not speak of "revision 0".
func TestGapString(t *testing.T) {
	require.Equal(t, `events: gap in b key "a": writes after revision 12 through 15 were not delivered (next 20)`,
		Gap{Source: "b", Key: "a", After: 12, Through: 15, Next: 20}.String())
	require.Equal(t, `events: gap in b key "a": its writes up to revision 45 were not delivered (next 46)`,
		Gap{Source: "b", Key: "a", Through: 45, Next: 46}.String())
	require.Equal(t, `events: gap in b: revisions 3..9 left the stream before they were read`,
		Gap{Source: "b", After: 2, Through: 9}.String())
}
