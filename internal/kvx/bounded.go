package kvx

// BoundedMap is a map that holds at most a fixed number of keys: adding
// a new key to a full map first forgets an arbitrary one. It is for
// caches whose entries are only shortcuts, so that forgetting one costs
// a read, never correctness. The zero value is not usable; call
// NewBoundedMap. It is not safe for concurrent use: its owner guards it.
type BoundedMap[V any] struct {
	max int
	m   map[string]V
}

// NewBoundedMap returns an empty BoundedMap of at most max (> 0) keys.
func NewBoundedMap[V any](max int) BoundedMap[V] {
	return BoundedMap[V]{max: max, m: make(map[string]V)}
}

// Get returns key's value and whether the map holds it.
func (b BoundedMap[V]) Get(key string) (V, bool) {
	v, ok := b.m[key]
	return v, ok
}

// Put sets key's value, forgetting an arbitrary other key when the map
// is full and key is new.
func (b BoundedMap[V]) Put(key string, v V) {
	if _, ok := b.m[key]; !ok && len(b.m) >= b.max {
		for k := range b.m {
			delete(b.m, k)
			break
		}
	}
	b.m[key] = v
}

// Delete forgets key.
func (b BoundedMap[V]) Delete(key string) { delete(b.m, key) }

// Len returns the number of keys held.
func (b BoundedMap[V]) Len() int { return len(b.m) }
