package kvledger

import (
	"encoding/json"

	"github.com/natscoord/natscoord/internal/jsonx"
)

// refMarshalRecord and refUnmarshalRecord are encoding/json reading the
// record's tags (kvRecord): the reference appendRecordFields and decodeRecordFast
// are held to. The bytes already stored are held by the golden records
// (TestGoldenRecords).
func refMarshalRecord(s TaskState, insert bool) ([]byte, error) {
	return json.Marshal(kvRecord{TaskState: s, Ins: insert})
}

func refUnmarshalRecord(data []byte) (kvRecord, error) {
	var r kvRecord
	err := jsonx.Unmarshal(data, &r)
	return r, err
}

// fastDecodeRecord runs the fast path alone on a fresh record.
func fastDecodeRecord(data []byte) (kvRecord, bool) {
	var r kvRecord
	ok := decodeRecordFast(data, &r, "")
	return r, ok
}
