package events_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/events"
)

// TestMarshalRefusesInvalidUTF8: an event whose key (or source, or
// blocked_by) is not valid UTF-8 is refused before it is published; JSON
// would deliver it under another key, which subscribers would apply to
// another task and the stream would de-duplicate under another MsgID.
func TestMarshalRefusesInvalidUTF8(t *testing.T) {
	for _, e := range []events.Event{
		ev("ledger.admitted", "a\xffb", 1),
		{Name: "ledger.admitted", Source: "t\xfe", Key: "k", Revision: 1},
		{Name: "ledger.blocked", Source: "tasks", Key: "k", Revision: 1, BlockedBy: "\x80"},
	} {
		_, err := events.Marshal(e)
		require.ErrorIs(t, err, events.ErrInvalidEvent, "%q", e.Key)
	}
	// Raw invalid bytes inside a received JSON string decode as U+FFFD:
	// valid, and the same event once re-encoded.
	e, err := events.Unmarshal([]byte("{\"name\":\"ledger.admitted\",\"source\":\"s\",\"key\":\"a\xffb\"}"))
	require.NoError(t, err)
	require.Equal(t, "a\uFFFDb", e.Key)
}
