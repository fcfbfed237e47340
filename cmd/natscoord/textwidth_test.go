package main

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestDisplayWidth(t *testing.T) {
	for s, w := range map[string]int{
		"":             0,
		"abc":          3,
		"日本語":          6,
		"e\u0301":      1, // combining acute
		"ｈｅｌｌｏ":        10,
		"🚀":            2,
		"👍🏽":           4, // two wide code points (base + skin tone)
		"a\u200db":     2, // zero-width joiner
		"한국어":          6,
		"\u1100\u1161": 2, // leading jamo wide, medial zero
		"ü":            1,
	} {
		require.Equal(t, w, displayWidth(s), "%q", s)
	}
}

func TestEscapeCell(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "plain",
		"a\nb":         `a\nb`,
		"tab\there":    `tab\there`,
		"\x1b[31m":     `\x1b[31m`,
		"del\x7f":      `del\x7f`,
		"c1\u0085":     `c1\u0085`,
		"bidi\u202e":   `bidi\u202e`,
		"iso\u2066":    `iso\u2066`,
		"ls\u2028":     `ls\u2028`,
		"bad\xffutf8":  `bad\xffutf8`,
		"日本\\n":        `日本\n`, // a backslash is kept as it is
		"emoji🚀\u200d": "emoji🚀\u200d",
	} {
		require.Equal(t, want, escapeCell(in), "%q", in)
	}
}

func TestWriteTableAligns(t *testing.T) {
	var b strings.Builder
	require.NoError(t, writeTable(&b, []string{"KEY", "V"}, [][]string{{"日本", "1"}, {"a\nb", "2"}, {"abcdef", "3"}}))
	require.Equal(t, "KEY     V\n日本    1\na\\nb    2\nabcdef  3\n", b.String())
}

// FuzzEscapeCell: an escaped cell is valid UTF-8, holds no character a
// terminal acts on, and is left alone by a second escape.
func FuzzEscapeCell(f *testing.F) {
	for _, s := range []string{"", "a", "a\nb", "\x1b[2J", "\xff\xfe", "日本\u0301", "\u202e", "\u0085", "🚀\u200d🔥"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := escapeCell(s)
		require.True(t, utf8.ValidString(e))
		for _, r := range e {
			require.False(t, needsEscape(r), "%q in %q", r, e)
			require.False(t, unicode.IsControl(r), "%q in %q", r, e)
		}
		require.Equal(t, e, escapeCell(e))
		require.GreaterOrEqual(t, displayWidth(e), 0)
		if strings.IndexFunc(s, needsEscape) < 0 && utf8.ValidString(s) {
			require.Equal(t, s, e)
		}
	})
}
