package jsonx

import "sync/atomic"

// The decoders read the same short strings over and over: a record's
// kind, group and lease key, a payload's object keys and small values
// (the runtime's record watch decodes every record three times per
// task). internString returns such a string from a small shared table
// instead of a new copy each time, and internValue, for a value decoded
// into an `any`, the boxed interface too, so a string seen before costs
// no allocation. The table is bounded (internSlots entries of at most
// internMax bytes, the last one written to a slot wins), so a string
// that never repeats costs one more allocation, and nothing grows.
const (
	internSlots = 1 << 12
	// internMax bounds object keys and the record's string fields; 64
	// bytes hold a worker's lease key ("<prefix>w.<owner token>"), which
	// 32 did not.
	internMax = 64
	// internValueMax bounds string values decoded into an `any` (a
	// payload's): short ones are mostly enumerations ("noop", "high"),
	// longer ones mostly identifiers that never repeat, for which the
	// table would only add an allocation.
	internValueMax = 16
)

type internEntry struct {
	s string
	v any // s boxed, made the first time Value wants it
}

var internTable [internSlots]atomic.Pointer[internEntry]

func internSlot(raw []byte) *atomic.Pointer[internEntry] {
	h := uint32(2166136261) // FNV-1a
	for _, c := range raw {
		h = (h ^ uint32(c)) * 16777619
	}
	return &internTable[h&(internSlots-1)]
}

// internString is string(raw), shared when it is short.
func internString(raw []byte) string {
	if len(raw) == 0 || len(raw) > internMax {
		return string(raw)
	}
	slot := internSlot(raw)
	if e := slot.Load(); e != nil && e.s == string(raw) {
		return e.s
	}
	s := string(raw)
	slot.Store(&internEntry{s: s})
	return s
}

// internValue is string(raw) boxed in an interface, both shared when
// short.
func internValue(raw []byte) any {
	if len(raw) == 0 || len(raw) > internValueMax {
		return string(raw)
	}
	slot := internSlot(raw)
	e := slot.Load()
	switch {
	case e != nil && e.s == string(raw) && e.v != nil:
		return e.v
	case e != nil && e.s == string(raw):
		e = &internEntry{s: e.s, v: e.s}
	default:
		s := string(raw)
		e = &internEntry{s: s, v: s}
	}
	slot.Store(e)
	return e.v
}
