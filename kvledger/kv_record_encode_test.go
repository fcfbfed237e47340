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

// BenchmarkRecordKeyed encodes and decodes the same three records under
// a key of a realistic length (BenchmarkDecodeRecord's key is one byte,
// which Go never allocates for).
func BenchmarkRecordKeyed(b *testing.B) {
	const key = "orders/2026-12-02/img-000042.png"
	samples := decodeSamples()
	for _, tc := range []struct {
		name string
		s    TaskState
	}{{"pending", samples[0]}, {"claimed", samples[1]}, {"completed", samples[2]}} {
		s := tc.s
		s.Key = key
		insert := tc.name == "pending"
		data, err := encodeRecord(s, insert)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("encode/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeRecord(s, insert); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeRecord(key, data, 9); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
