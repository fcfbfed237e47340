package kvledger

import (
	"strconv"

	"github.com/natscoord/natscoord/internal/jsonx"
)

// appendRecord appends the stored form of s (kvRecord) to b without
// reflection. The output is byte for byte what json.Marshal of the
// kvRecord gives (FuzzAppendRecord checks it), so the stored format, the
// decoder and old records are untouched; this only makes the write path
// cheaper, where encoding/json was most of the client's CPU time in Admit
// of a new key (map key sorting, reflection on every field, time
// marshalers, one allocation per step).
//
// ok is false when encoding/json must decide: a time it refuses, a Task
// value it rejects (NaN, a channel) or whose encoding this file does not
// reproduce. The caller then marshals with encoding/json, which returns
// the same bytes or the same error as before.
func appendRecord(b []byte, s TaskState, insert bool) ([]byte, bool) {
	ok := true
	b = append(b, `{"key":`...)
	b = jsonx.AppendString(b, string(s.Key))
	b = append(b, `,"status":`...)
	b = jsonx.AppendString(b, string(s.Status))
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, uint64(s.Sequence), 10)
	b = jsonx.AppendOptional(b, `,"owner":`, string(s.Owner))
	b = append(b, `,"fence":`...)
	b = strconv.AppendUint(b, uint64(s.Fence), 10)
	if !s.LeaseUntil.IsZero() {
		b = append(b, `,"lease_until":`...)
		if b, ok = jsonx.AppendTime(b, s.LeaseUntil); !ok {
			return b, false
		}
	}
	if len(s.Needs) > 0 {
		b = append(b, `,"needs":[`...)
		for i, n := range s.Needs {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonx.AppendString(b, string(n))
		}
		b = append(b, ']')
	}
	b = jsonx.AppendOptional(b, `,"blocked_by":`, string(s.BlockedBy))
	if s.Task != nil {
		b = append(b, `,"task":`...)
		if b, ok = jsonx.AppendValue(b, s.Task, 0); !ok {
			return b, false
		}
	}
	b = jsonx.AppendOptional(b, `,"created_by":`, string(s.CreatedBy))
	var created []byte
	if !s.CreatedAt.IsZero() {
		b = append(b, `,"created_at":`...)
		n := len(b)
		if b, ok = jsonx.AppendTime(b, s.CreatedAt); !ok {
			return b, false
		}
		created = b[n:]
	}
	b = jsonx.AppendOptional(b, `,"updated_by":`, string(s.UpdatedBy))
	if !s.UpdatedAt.IsZero() {
		b = append(b, `,"updated_at":`...)
		if created != nil && s.UpdatedAt == s.CreatedAt {
			// The same instant in the same location formats the same:
			// reuse the text (an insert's two times are both "now").
			b = append(b, created...)
		} else if b, ok = jsonx.AppendTime(b, s.UpdatedAt); !ok {
			return b, false
		}
	}
	b = jsonx.AppendOptional(b, `,"last_event":`, string(s.LastEvent))
	if b, ok = appendRuntimeFields(b, s); !ok {
		return b, false
	}
	if insert {
		b = append(b, `,"ins":true`...)
	}
	return append(b, '}'), true
}

// recordSizeHint is a capacity for appendRecord's buffer that a record
// with a small task payload fits in, so it is allocated once.
func recordSizeHint(s TaskState) int {
	n := 320 + len(s.Key) + len(s.Owner) + len(s.BlockedBy) + len(s.CreatedBy) + len(s.UpdatedBy)
	for _, k := range s.Needs {
		n += len(k) + 3
	}
	return n
}
