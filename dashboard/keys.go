package dashboard

import (
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// displayKey is how every key, owner and holder is shown: as it is when
// it is printable UTF-8, otherwise Go-quoted, so control bytes, invalid
// UTF-8 and look-alike spacing are visible and two distinct keys never
// look the same. Templates escape the result for their context.
func displayKey(k string) string {
	if k == "" {
		return ""
	}
	if !utf8.ValidString(k) || strings.IndexFunc(k, func(r rune) bool { return !unicode.IsGraphic(r) }) >= 0 ||
		strings.HasPrefix(k, `"`) || strings.TrimSpace(k) != k {
		return strconv.Quote(k)
	}
	return k
}

// keyRef is the exact, ASCII form of a key in URLs and in live events.
func keyRef(k string) string { return url.QueryEscape(k) }
