package kvx

import "github.com/nats-io/nats.go/jetstream"

// FromWatch converts an entry of a caller's own kv.Watch into an Entry
// (expiry markers, which nats.go reports as purges, become OpPurge), for
// watchers that need every key's events in order rather than a Hub's
// latest-change wake-ups. Every caller that runs its own kv.Watch converts
// its entries here, so expiry markers read the same everywhere.
func FromWatch(e jetstream.KeyValueEntry) Entry { return fromWatch(e) }
