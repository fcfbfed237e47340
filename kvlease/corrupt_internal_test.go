package kvlease

import (
	"testing"

	"github.com/natscoord/natscoord/internal/kvx"
)

// A conflict lost to writers that were never seen comes back with a zero
// Entry; that is contention, not a corrupt value (eight contenders on one
// lock saw "corrupt value at revision 0" before).
func TestZeroEntryIsNotCorrupt(t *testing.T) {
	if corruptEntry(kvx.Entry{}) {
		t.Fatal("a zero entry was judged corrupt")
	}
	if !corruptEntry(kvx.Entry{Key: "k", Revision: 3, Value: []byte("garbage")}) {
		t.Fatal("a stored garbage value was not judged corrupt")
	}
}
