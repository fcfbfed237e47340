package events

import (
	"strconv"

	"github.com/natscoord/natscoord/internal/jsonx"
)

// appendEvent appends e's wire form without reflection: byte for byte
// what json.Marshal(e) gives (FuzzMarshalMatchesEncodingJSON checks it).
// Every write of a ledger record marshals one event, and encoding/json
// was about a tenth of the runtime's client CPU for that. ok is false for
// a time encoding/json refuses; Marshal then lets encoding/json report it.
func appendEvent(b []byte, e Event) ([]byte, bool) {
	ok := true
	b = append(b, `{"name":`...)
	b = jsonx.AppendString(b, string(e.Name))
	b = append(b, `,"source":`...)
	b = jsonx.AppendString(b, e.Source)
	b = append(b, `,"key":`...)
	b = jsonx.AppendString(b, e.Key)
	b = append(b, `,"revision":`...)
	b = strconv.AppendUint(b, e.Revision, 10)
	b = jsonx.AppendOptional(b, `,"status":`, e.Status)
	b = jsonx.AppendOptional(b, `,"actor":`, e.Actor)
	b = jsonx.AppendOptional(b, `,"owner":`, e.Owner)
	b = append(b, `,"fence":`...)
	b = strconv.AppendUint(b, e.Fence, 10)
	b = jsonx.AppendOptional(b, `,"blocked_by":`, e.BlockedBy)
	b = append(b, `,"time":`...)
	if b, ok = jsonx.AppendTime(b, e.Time); !ok {
		return b, false
	}
	b = jsonx.AppendOptional(b, `,"kind":`, e.Kind)
	if e.Attempts != 0 {
		b = append(b, `,"attempts":`...)
		b = strconv.AppendInt(b, int64(e.Attempts), 10)
	}
	b = jsonx.AppendOptional(b, `,"last_error":`, e.LastError)
	if !e.RunAt.IsZero() {
		b = append(b, `,"run_at":`...)
		if b, ok = jsonx.AppendTime(b, e.RunAt); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// eventSizeHint is a capacity appendEvent's output fits in unless a
// string field is long, so it is allocated once.
func eventSizeHint(e Event) int {
	return 200 + len(e.Name) + len(e.Source) + len(e.Key) + len(e.Status) + len(e.Actor) + len(e.Owner) +
		len(e.BlockedBy) + len(e.Kind) + len(e.LastError)
}
