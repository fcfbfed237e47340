package kvlease

import "fmt"

// HolderOf decodes a live lease entry as a View delivers it (Lookup,
// Children, a subscription) into its Holder, with Revision and Expires
// set as HolderOfKey sets them: Expires is the server's time of the
// entry's write plus the TTL as the server counts it. A marker or a
// value that is not a lease returns an error (ErrCorruptValue for a
// marker).
func HolderOf(c Change) (Holder, error) {
	if !c.Live() {
		return Holder{}, fmt.Errorf("%w: %q is not held (%s at revision %d)", ErrCorruptValue, c.Key, c.Op, c.Revision)
	}
	h, err := decodeValue(c.Value)
	if err != nil {
		return Holder{}, err
	}
	h.Revision = c.Revision
	if !c.Created.IsZero() {
		h.Expires = c.Created.Add(serverTTL(h.TTL()))
	}
	return h, nil
}
