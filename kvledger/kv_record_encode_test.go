package kvledger

import "testing"

// BenchmarkEncodeRecord measures encodeRecord on the three records the
// runtime writes per task (the insert, the claim, the completion).
func BenchmarkEncodeRecord(b *testing.B) {
	samples := decodeSamples()
	for _, tc := range []struct {
		name string
		s    TaskState
	}{{"pending", samples[0]}, {"claimed", samples[1]}, {"completed", samples[2]}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeRecord(tc.s, tc.name == "pending"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
