package kvledger_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

func TestDecodeRejects(t *testing.T) {
	for name, in := range map[string]string{
		"not json":       `{"tasks":[`,
		"wrong shape":    `[1,2]`,
		"trailing":       `{"tasks":[]} {}`,
		"unknown status": `{"tasks":[{"key":"a","status":"running","sequence":1}]}`,
		"empty status":   `{"tasks":[{"key":"a","sequence":1}]}`,
		"empty key":      `{"tasks":[{"key":"","status":"pending"}]}`,
		"self need":      `{"tasks":[{"key":"a","status":"pending","needs":["a"]}]}`,
		"blocked no by":  `{"tasks":[{"key":"a","status":"blocked"}]}`,
		"claimed bare":   `{"tasks":[{"key":"a","status":"claimed","owner":"w"}]}`,
		"duplicate key":  `{"tasks":[{"key":"a","status":"pending"},{"key":"a","status":"pending"}]}`,
		"bad time":       `{"tasks":[{"key":"a","status":"pending","created_at":"yesterday"}]}`,
		"fence negative": `{"tasks":[{"key":"a","status":"pending","fence":-1}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := kvledger.Decode([]byte(in))
			require.Error(t, err)
			require.True(t, errorsIsAny(err, kvledger.ErrMalformed, kvledger.ErrInvalidState), "%v", err)
		})
	}
	s, err := kvledger.Decode([]byte(`{"tasks":[{"key":"a","status":"claimed","owner":"w","lease_until":"2026-11-29T10:00:00Z","fence":3,"task":{"n":1}}]}`))
	require.NoError(t, err)
	require.Equal(t, map[string]any{"n": json.Number("1")}, s.Tasks[0].Task)
	_, err = kvledger.Encode(kvledger.Snapshot{Tasks: []kvledger.TaskState{{Key: "a", Status: "x"}}})
	require.ErrorIs(t, err, kvledger.ErrInvalidState)
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"tasks":[{"key":"a","status":"pending","sequence":1,"needs":["b"],"task":{"x":[1,"y",null]}}]}`))
	f.Add([]byte(`{"tasks":[{"key":"b","status":"blocked","blocked_by":"a"}]}`))
	f.Add([]byte(`{"tasks":[{"key":"a","status":"claimed","owner":"w","lease_until":"2026-11-29T10:00:00Z","fence":3}]}`))
	f.Add([]byte(`{"tasks":[{"key":"a","status":"unknown"}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := kvledger.Decode(data)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes and decodes to the same snapshot.
		b, err := kvledger.Encode(s)
		require.NoError(t, err)
		s2, err := kvledger.Decode(b)
		require.NoError(t, err)
		require.Equal(t, len(s.Tasks), len(s2.Tasks))
		for i := range s.Tasks {
			require.Equal(t, s.Tasks[i].Key, s2.Tasks[i].Key)
			require.Equal(t, s.Tasks[i].Status, s2.Tasks[i].Status)
		}
	})
}
