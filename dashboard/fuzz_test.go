package dashboard

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/natscoord/natscoord/internal/kvx"
)

// FuzzKeyForms checks the two forms a key takes on a page: the form in
// links round-trips exactly and is ASCII, and the display form is valid UTF-8,
// shows the key unchanged when it is plain, and quotes it otherwise.
func FuzzKeyForms(f *testing.F) {
	for _, s := range []string{"", "a", "build-42", "a b", "<script>", "\x00\xff", " lead", `"q"`, "\u202e", "ünï"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		ref := keyRef(k)
		back, err := url.QueryUnescape(ref)
		if err != nil || back != k {
			t.Fatalf("ref %q of %q does not round-trip: %q, %v", ref, k, back, err)
		}
		for i := range len(ref) {
			if ref[i] >= 0x80 || ref[i] < 0x20 {
				t.Fatalf("ref %q is not plain ASCII", ref)
			}
		}
		d := displayKey(k)
		if !utf8.ValidString(d) {
			t.Fatalf("display %q of %q is not UTF-8", d, k)
		}
		if d != k {
			if uq, err := strconv.Unquote(d); err != nil || uq != k {
				t.Fatalf("display %q is neither %q nor its quoted form", d, k)
			}
		}
	})
}

// FuzzClassify feeds arbitrary keys and values to the lease decoder: it
// never panics, accepts only values with an owner hash and a TTL, and
// gives every accepted key a kind.
func FuzzClassify(f *testing.F) {
	f.Add("jobs.j1", []byte(`{"holder":"h","host":"x","pid":1,"acquired":"2026-01-01T00:00:00Z","ttl_ms":1000,"owner":"abc"}`))
	f.Add("app.l.orders.42", []byte(`{"holder":"h","ttl_ms":5000,"owner":"abc"}`))
	f.Add("app.e.x", []byte(`{"ttl_ms":5000,"owner":"abc"}`))
	f.Add("pool.db.2", []byte(`{"ttl_ms":5000,"owner":"abc"}`))
	f.Add("x", []byte(`not json`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		r, ok := classify("b", kvx.Entry{Key: key, Value: value, Revision: 7, Created: time.Unix(0, 0)})
		if !ok {
			return
		}
		if r.owner == "" || r.TTL <= 0 {
			t.Fatalf("accepted a value without owner or TTL: %+v", r)
		}
		if r.Kind == "" {
			t.Fatalf("no kind: %+v", r)
		}
	})
}

// FuzzEventJSON: whatever an event's key holds, the pushed JSON is valid
// and carries the exact reference.
func FuzzEventJSON(f *testing.F) {
	f.Add("k", "w")
	f.Add("\xff\x00<", "\n")
	f.Fuzz(func(t *testing.T, key, owner string) {
		b := eventJSON(eventFor(key, owner))
		if !utf8.Valid(b) {
			t.Fatalf("not UTF-8: %q", b)
		}
		if !strings.Contains(string(b), `"ref":"`+keyRef(key)+`"`) {
			t.Fatalf("ref of %q missing in %s", key, b)
		}
	})
}
