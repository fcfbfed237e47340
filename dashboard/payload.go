package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPayloadShown bounds the text of a task's arguments, and of its
// result, that the task page shows: the first 16 KiB of the
// pretty-printed form, then a note naming the stored size.
const maxPayloadShown = 16 << 10

// payloadView is a task's arguments or result as the task page shows
// them: indented JSON when the stored form is valid JSON, else its text
// (html/template escapes either), cut at maxPayloadShown.
type payloadView struct {
	Text string
	// Size is the stored form's size in bytes (the JSON of the
	// arguments, the result's bytes); Cut reports that Text is only its
	// beginning.
	Size int
	Cut  bool
}

// argsView shows a record's payload (TaskState.Task): the KVStore hands
// it back decoded from JSON, so its JSON is what was stored.
func argsView(task any) (payloadView, bool) {
	if task == nil {
		return payloadView{}, false
	}
	// Not json.Marshal: it writes <, > and & as \u escapes, which the
	// page's own escaping makes unnecessary.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(task); err != nil { // a MemStore keeps any Go value: show its text
		return rawView([]byte(fmt.Sprint(task))), true
	}
	return rawView(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), true
}

// rawView shows raw: indented when it is valid JSON, its text otherwise.
func rawView(raw []byte) payloadView {
	v := payloadView{Size: len(raw)}
	text := raw
	if json.Valid(raw) {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") == nil {
			text = b.Bytes()
		}
	}
	if len(text) > maxPayloadShown {
		text, v.Cut = text[:maxPayloadShown], true
	}
	v.Text = strings.ToValidUTF8(string(text), string(utf8.RuneError))
	return v
}

// maxErrorLine bounds the last error a task list keeps per record (the
// view holds every record, so not the whole error): its first line, at
// most this many bytes. The task page reads the whole error from the
// store.
const maxErrorLine = 200

// errorLine is the first line of err cut at maxErrorLine bytes, with
// "…" when anything was left out.
func errorLine(err string) string {
	line, _, more := strings.Cut(strings.TrimSpace(err), "\n")
	line = strings.TrimRight(line, "\r")
	if len(line) > maxErrorLine {
		line, more = line[:maxErrorLine], true
	}
	line = errText(line) // a cut inside a rune leaves a replacement char
	if more {
		line += "…"
	}
	return line
}

// errText is an error's text as a page shows it (html/template escapes
// it): invalid UTF-8, control characters other than newline and tab,
// and format characters (bidi overrides) are replaced by U+FFFD, so
// nothing in it can move or hide the text around it; newlines are kept
// for the page to wrap at.
func errText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r) {
			return r
		}
		return utf8.RuneError
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}
