package jsonx_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/jsonx"
)

// TestInternedValuesUnderConcurrentDecodes: goroutines decoding values
// whose short strings share and overwrite intern slots each get exactly
// the strings their input holds (the race detector checks the table).
func TestInternedValuesUnderConcurrentDecodes(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k, v := fmt.Sprintf("k%d", i%300), fmt.Sprintf("v%d-%d", g, i%500)
				d := jsonx.NewScanner([]byte(`{"` + k + `":"` + v + `"}`))
				got, ok := d.Value()
				if !ok || !d.Done() {
					t.Errorf("decode %s:%s failed", k, v)
					return
				}
				if m := got.(map[string]any); len(m) != 1 || m[k] != v {
					t.Errorf("decoded %v, want %s:%s", m, k, v)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestInternedValueAllocatesOnlyTheMap: decoded again, an object of
// short strings costs only its map; its key and value (and the value's
// interface) come from the intern table.
func TestInternedValueAllocatesOnlyTheMap(t *testing.T) {
	in, none := []byte(`{"job":"thumbnail"}`), []byte(`{}`)
	decode := func(b []byte) {
		d := jsonx.NewScanner(b)
		_, ok := d.Value()
		require.True(t, ok)
	}
	empty := testing.AllocsPerRun(50, func() { decode(none) })
	short := testing.AllocsPerRun(50, func() { decode(in) })
	require.LessOrEqual(t, short, empty+1, "the map's first group at most") // a map with an entry has a group
}
