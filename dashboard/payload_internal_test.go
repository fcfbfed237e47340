package dashboard

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// What is not JSON is shown as its text; a cut never splits a rune; a
// Go value a MemStore keeps that JSON cannot encode is shown by its text.
func TestPayloadViewTextAndCuts(t *testing.T) {
	v := rawView([]byte("plain <text>\x00"))
	require.Equal(t, payloadView{Text: "plain <text>\x00", Size: 13}, v)

	big := strings.Repeat("é", maxPayloadShown) // two bytes each
	v = rawView([]byte(big))
	require.True(t, v.Cut)
	require.Equal(t, 2*maxPayloadShown, v.Size)
	require.True(t, utf8.ValidString(v.Text))
	require.LessOrEqual(t, len(v.Text), maxPayloadShown+len("\uFFFD"))

	v, ok := argsView(map[string]any{"f": func() {}})
	require.True(t, ok)
	require.Contains(t, v.Text, "map[f:")
	_, ok = argsView(nil)
	require.False(t, ok)
}

// A task list's error is its first line, at most maxErrorLine bytes and
// valid UTF-8, "…" marking what was left out; control and format
// characters (a bidi override) cannot hide or move text.
func TestErrorLine(t *testing.T) {
	require.Equal(t, "", errorLine(""))
	require.Equal(t, "boom", errorLine("  boom \n"))
	require.Equal(t, "first…", errorLine("first\r\nsecond"))
	long := errorLine(strings.Repeat("ü", maxErrorLine))
	require.True(t, utf8.ValidString(long))
	require.True(t, strings.HasSuffix(long, "…"))
	require.LessOrEqual(t, len(long), maxErrorLine+len("…"))
	require.Equal(t, "a\uFFFDb\uFFFDc\uFFFD", errorLine("a\x1bb\u202ec\xff"))
	require.Equal(t, "keeps\n\tlines", errText("keeps\n\tlines"))
}
