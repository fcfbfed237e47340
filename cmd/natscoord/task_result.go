package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/natscoord/natscoord/internal/jsonx"
)

// resultOf turns a command's stdout into a task result: JSON output is
// kept as it is (compacted); any other output becomes a JSON string,
// without its last newline. The result's JSON is at most limit bytes;
// the second value reports that the text was cut to fit.
func resultOf(stdout []byte, limit int) (json.RawMessage, bool) {
	if len(bytes.TrimSpace(stdout)) == 0 {
		return nil, false
	}
	if json.Valid(stdout) {
		var b bytes.Buffer
		if json.Compact(&b, stdout) == nil && b.Len() <= limit {
			return b.Bytes(), false
		}
	}
	return stringPrefixJSON(strings.TrimSuffix(string(stdout), "\n"), limit)
}

// stringPrefixJSON returns the JSON string of the longest prefix of s,
// cut on a rune boundary, whose JSON is at most limit bytes, and whether
// it had to cut. encoding/json escapes each rune (or invalid byte) on
// its own, so the JSON of a prefix is the quotes around the sum of its
// runes' escapes: the prefix is found in one pass. (Cutting by a fixed
// fraction and trying again kept 3/4 of the limit for plain text that
// was only the two quotes too long.)
func stringPrefixJSON(s string, limit int) (json.RawMessage, bool) {
	if limit < 2 {
		return nil, s != ""
	}
	if enc := jsonx.AppendString(nil, s); len(enc) <= limit {
		return enc, false
	}
	room := limit - 2
	var one []byte
	n := 0
	for n < len(s) {
		_, size := utf8.DecodeRuneInString(s[n:])
		one = jsonx.AppendString(one[:0], s[n:n+size])
		if len(one)-2 > room {
			break
		}
		room -= len(one) - 2
		n += size
	}
	if n == 0 {
		return nil, true
	}
	return jsonx.AppendString(nil, s[:n]), true
}
