package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Table cells hold keys, owners and payloads that come from the bucket,
// so they can be any string. Two things would break a table: a control
// character (a newline splits a row, an escape sequence rewrites the
// terminal, a bidi override reorders what follows) and a character whose
// display width is not one column (CJK and most emoji take two, combining
// marks none), which shifts every column after it. escapeCell removes the
// first, displayWidth measures the second. --json prints the exact values.

// escapeCell returns s with every character that a terminal would act on
// instead of print written as a Go escape: C0 and C1 controls and DEL
// (\n, \t, \x1b, \u0085), line and paragraph separators, the bidi
// embedding, override and isolate controls, and invalid UTF-8 bytes
// (\xff). Anything else, backslashes included, is kept as it is.
func escapeCell(s string) string {
	i := strings.IndexFunc(s, needsEscape)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports the runes escapeCell rewrites (invalid bytes aside).
func needsEscape(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi controls
		return true
	}
	return false
}

// displayWidth returns the number of terminal columns s takes: 0 for
// combining marks, format characters (zero-width joiner, variation
// selectors) and Hangul medial/final jamo, 2 for East Asian wide and
// fullwidth characters and emoji presentations, 1 for the rest. It is
// the usual wcwidth approximation; s must already be escaped (controls
// have no width of their own).
func displayWidth(s string) int {
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

func runeWidth(r rune) int {
	switch {
	case r < 0x300:
		return 1 // ASCII and Latin-1 (no combining marks before U+0300)
	case r >= 0x1160 && r <= 0x11ff:
		return 0
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case wide(r):
		return 2
	}
	return 1
}

// wideRanges are the code point ranges of East Asian Width W and F (and
// the emoji blocks a terminal draws two columns wide), sorted.
var wideRanges = [][2]rune{
	{0x1100, 0x115f}, {0x231a, 0x231b}, {0x2329, 0x232a}, {0x23e9, 0x23ec}, {0x23f0, 0x23f0},
	{0x23f3, 0x23f3}, {0x25fd, 0x25fe}, {0x2614, 0x2615}, {0x2648, 0x2653}, {0x267f, 0x267f},
	{0x2693, 0x2693}, {0x26a1, 0x26a1}, {0x26aa, 0x26ab}, {0x26bd, 0x26be}, {0x26c4, 0x26c5},
	{0x26ce, 0x26ce}, {0x26d4, 0x26d4}, {0x26ea, 0x26ea}, {0x26f2, 0x26f3}, {0x26f5, 0x26f5},
	{0x26fa, 0x26fa}, {0x26fd, 0x26fd}, {0x2705, 0x2705}, {0x270a, 0x270b}, {0x2728, 0x2728},
	{0x274c, 0x274c}, {0x274e, 0x274e}, {0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797},
	{0x27b0, 0x27b0}, {0x27bf, 0x27bf}, {0x2b1b, 0x2b1c}, {0x2b50, 0x2b50}, {0x2b55, 0x2b55},
	{0x2e80, 0x303e}, {0x3041, 0x33ff}, {0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xa000, 0xa4cf},
	{0xa960, 0xa97f}, {0xac00, 0xd7a3}, {0xf900, 0xfaff}, {0xfe10, 0xfe19}, {0xfe30, 0xfe6f},
	{0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x16fe0, 0x16fe4}, {0x17000, 0x18cff}, {0x1b000, 0x1b2ff},
	{0x1f004, 0x1f004}, {0x1f0cf, 0x1f0cf}, {0x1f18e, 0x1f18e}, {0x1f191, 0x1f19a}, {0x1f200, 0x1f202},
	{0x1f210, 0x1f23b}, {0x1f240, 0x1f248}, {0x1f250, 0x1f251}, {0x1f260, 0x1f265}, {0x1f300, 0x1f320},
	{0x1f32d, 0x1f335}, {0x1f337, 0x1f37c}, {0x1f37e, 0x1f393}, {0x1f3a0, 0x1f3ca}, {0x1f3cf, 0x1f3d3},
	{0x1f3e0, 0x1f3f0}, {0x1f3f4, 0x1f3f4}, {0x1f3f8, 0x1f43e}, {0x1f440, 0x1f440}, {0x1f442, 0x1f4fc},
	{0x1f4ff, 0x1f53d}, {0x1f54b, 0x1f54e}, {0x1f550, 0x1f567}, {0x1f57a, 0x1f57a}, {0x1f595, 0x1f596},
	{0x1f5a4, 0x1f5a4}, {0x1f5fb, 0x1f64f}, {0x1f680, 0x1f6c5}, {0x1f6cc, 0x1f6cc}, {0x1f6d0, 0x1f6d2},
	{0x1f6d5, 0x1f6d7}, {0x1f6dc, 0x1f6df}, {0x1f6eb, 0x1f6ec}, {0x1f6f4, 0x1f6fc}, {0x1f7e0, 0x1f7eb},
	{0x1f7f0, 0x1f7f0}, {0x1f90c, 0x1f93a}, {0x1f93c, 0x1f945}, {0x1f947, 0x1f9ff}, {0x1fa70, 0x1faff},
	{0x20000, 0x2fffd}, {0x30000, 0x3fffd},
}

func wide(r rune) bool {
	lo, hi := 0, len(wideRanges)
	for lo < hi {
		m := (lo + hi) / 2
		switch rg := wideRanges[m]; {
		case r < rg[0]:
			hi = m
		case r > rg[1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// truncMarker ends a cell cut short by truncateCell.
const truncMarker = "…"

// truncateCell returns the escaped cell s cut to at most width display
// columns, ending with truncMarker when anything was cut. A cell is cut
// between characters (an escape such as \x1b may be cut within).
func truncateCell(s string, width int) string {
	if len(s) <= width || displayWidth(s) <= width {
		return s // a byte per column at most: fits
	}
	w, limit := 0, width-displayWidth(truncMarker)
	for i, r := range s {
		rw := runeWidth(r)
		if w+rw > limit {
			return s[:i] + truncMarker
		}
		w += rw
	}
	return s
}

// fitCell returns s escaped, truncated to width columns (truncateCell)
// and padded with spaces to exactly width: a cell of a column whose
// width is fixed before its rows are known, such as a stream's.
func fitCell(s string, width int) string {
	s = truncateCell(escapeCell(s), width)
	if n := width - displayWidth(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}
