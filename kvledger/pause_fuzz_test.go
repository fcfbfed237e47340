package kvledger

import (
	"errors"
	"testing"
	"time"
)

// FuzzDecodePause: any stored bytes decode to a pause of the key's kind
// or to ErrCorruptRecord, and a decoded pause encodes and decodes again
// to itself.
func FuzzDecodePause(f *testing.F) {
	seed, _ := encodePause(Pause{Kind: "k", Schedules: true, Actor: "a", At: time.Unix(1e9, 0)})
	f.Add(seed)
	f.Add([]byte(`{"v":1,"kind":"k"}`))
	f.Add([]byte(`{"v":2,"kind":"k"}`))
	f.Add([]byte(`{"v":1,"kind":"other"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, value []byte) {
		p, err := decodePause("k", value, 7)
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("error %v does not match ErrCorruptRecord", err)
			}
			return
		}
		if p.Kind != "k" || p.Rev != 7 {
			t.Fatalf("decoded %+v", p)
		}
		again, err := encodePause(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := decodePause("k", again, 7)
		if err != nil || q.Kind != p.Kind || q.Schedules != p.Schedules || q.Actor != p.Actor || !q.At.Equal(p.At) {
			t.Fatalf("round trip: %+v, %v; want %+v", q, err, p)
		}
	})
}
