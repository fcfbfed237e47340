package kvx

// maxSeen bounds the keys whose latest change a hub remembers. A waiter
// whose key has been forgotten only loses a shortcut (it reads the key).
const maxSeen = 4096

// Seen is the latest change of a key that a hub's watch has delivered.
type Seen struct {
	// Revision is the change's revision: a live value's, or a delete,
	// purge or expiry marker's.
	Revision uint64
	// Live reports a value (someone holds the key) rather than a marker.
	Live bool
}

// seenKeys remembers the latest change per key, bounded by maxSeen: when
// full, an arbitrary key is forgotten. Guarded by the hub's mutex.
type seenKeys struct{ BoundedMap[Seen] }

func newSeenKeys() seenKeys { return seenKeys{NewBoundedMap[Seen](maxSeen)} }

func (s seenKeys) note(e Entry) { s.Put(e.Key, Seen{Revision: e.Revision, Live: e.Live()}) }

// Known returns the latest change of key (one of the subscription's
// keys) that the hub had delivered when the subscription was made, if it
// remembered one. Together with From it tells a waiter the key's state
// without a read: every change after it reaches the subscription.
func (s *Sub) Known(key string) (Seen, bool) {
	for i, k := range s.keys {
		if k == key && s.known[i].Revision != 0 {
			return s.known[i], true
		}
	}
	return Seen{}, false
}
