package jsonx

import "sync/atomic"

// The decoders read the same short strings over and over: a record's
// kind, group and lease key, a payload's object keys and small values
// (the runtime's record watch decodes every record three times per
// task). interned returns such a string from a small shared table
// instead of a new copy each time, and for a value decoded into an
// `any` the boxed interface too, so a string seen before costs no
// allocation. The table is bounded (internSlots entries of at most
// internMax bytes, the last one written to a slot wins), so strings that
// never repeat cost one more allocation each, and nothing grows. 64 bytes
// hold a worker's lease key ("<prefix>w.<owner token>"), which 32 did not.
const (
	internSlots = 1 << 12
	internMax   = 64
)

type internEntry struct {
	s string
	v any // s boxed, for Value
}

var internTable [internSlots]atomic.Pointer[internEntry]

// interned returns the entry for raw, making it when the slot holds
// another string; nil when raw is too long or empty.
func interned(raw []byte) *internEntry {
	if len(raw) == 0 || len(raw) > internMax {
		return nil
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range raw {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &internTable[h&(internSlots-1)]
	if e := slot.Load(); e != nil && e.s == string(raw) {
		return e
	}
	s := string(raw)
	e := &internEntry{s: s, v: s}
	slot.Store(e)
	return e
}

// internString is string(raw), shared when it is short.
func internString(raw []byte) string {
	if e := interned(raw); e != nil {
		return e.s
	}
	return string(raw)
}
