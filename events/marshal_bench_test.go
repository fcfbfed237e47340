package events_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/natscoord/natscoord/events"
)

// BenchmarkMarshal: an outcome's event, with the direct encoder and with
// encoding/json.
func BenchmarkMarshal(b *testing.B) {
	e := events.Event{Name: "ledger.completed", Source: "rt12", Key: "r1-123", Revision: 4567, Status: "completed",
		Actor: "worker", Owner: "host:1234:abcdef", Fence: 4560, Time: time.Now(), Kind: "noop", Attempts: 1}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := events.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
