package kvx

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// TestReadAck: readAck reads exactly the acknowledgment shapes nats-server
// writes for a stored message and leaves every other answer to the full
// decoder.
func TestReadAck(t *testing.T) {
	for _, c := range []struct {
		in  string
		seq uint64
		ok  bool
	}{
		{`{"stream":"KV_leases","seq":1}`, 1, true},
		{`{"stream":"KV_leases","seq":18446744073709551615}`, 18446744073709551615, true},
		{`{"stream":"KV_leases","domain":"hub","seq":42}`, 42, true},
		{`{"stream":"KV_leases","domain":"","seq":42}`, 42, true},
		{`{"stream":"KV_leases","seq":18446744073709551616}`, 0, false}, // overflow
		{`{"stream":"KV_leases","seq":7,"duplicate": true}`, 0, false},
		{`{"stream":"KV_leases","seq":7,"batch":"b","count":2}`, 0, false},
		{`{"stream":"KV_leases","seq":7,"val":"3"}`, 0, false},
		{`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"KV_leases","seq":0}`, 0, false},
		{`{"stream":"","seq":7}`, 0, false},
		{`{"stream":"K\"V","seq":7}`, 0, false},
		{`{"stream":"KV","domain":"a\"b","seq":7}`, 0, false},
		{`{"stream":"KV","seq":}`, 0, false},
		{`{"stream":"KV","seq":-1}`, 0, false},
		{`{"stream":"KV","seq":01}`, 0, false},
		{`{"stream":"KV","seq":0}`, 0, true},
		{`{"stream":"KV","seq":1 }`, 0, false},
		{`{"stream":"KV","seq":1`, 0, false},
		{`{"stream":"KV"}`, 0, false},
		{``, 0, false},
		{`{"type":"io.nats.jetstream.api.v1.pub_ack","stream":"KV","seq":1}`, 0, false},
	} {
		seq, ok := readAck([]byte(c.in))
		require.Equal(t, c.ok, ok, c.in)
		require.Equal(t, c.seq, seq, c.in)
	}
}

// FuzzReadAck: whatever readAck accepts, encoding/json (which nats.go
// decodes acknowledgments with) reads as a successful acknowledgment of
// the same sequence.
func FuzzReadAck(f *testing.F) {
	f.Add([]byte(`{"stream":"KV_leases","seq":1}`))
	f.Add([]byte(`{"stream":"KV_leases","domain":"hub","seq":42}`))
	f.Add([]byte(`{"stream":"KV_leases","seq":7,"duplicate": true}`))
	f.Fuzz(func(t *testing.T, d []byte) {
		seq, ok := readAck(d)
		if !ok {
			return
		}
		var ack struct {
			Error *jetstream.APIError `json:"error,omitempty"`
			*jetstream.PubAck
		}
		require.NoError(t, json.Unmarshal(d, &ack), "%q", d)
		require.Nil(t, ack.Error)
		require.NotNil(t, ack.PubAck)
		require.NotEmpty(t, ack.Stream)
		require.False(t, ack.Duplicate)
		require.Equal(t, ack.Sequence, seq, "%q", d)
	})
}

// TestReadAckReadsTheServersAck: the acknowledgment of the server the
// module is built against takes readAck's path (were its format to
// change, writes would still work through the full decoder, only slower:
// this test says so).
func TestReadAckReadsTheServersAck(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	b, err := Open(ctx, n.JS, Config{Bucket: "ack", LimitMarkerTTL: time.Second})
	require.NoError(t, err)
	m := &nats.Msg{Subject: b.Subject("k"), Data: []byte("v"), Header: nats.Header{}}
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	m.Header.Set(jetstream.MsgTTLHeader, "5s")
	resp, err := n.JS.Conn().RequestMsgWithContext(ctx, m)
	require.NoError(t, err)
	seq, ok := readAck(resp.Data)
	require.True(t, ok, "%s", resp.Data)
	e, err := b.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, e.Revision, seq)

	// send writes the headers nats.go's options would.
	rev, err := b.send(ctx, &nats.Msg{Subject: b.Subject("h"), Data: []byte("v")}, casCond(0, 5*time.Second, "id-1"))
	require.NoError(t, err)
	s, err := n.JS.Stream(ctx, "KV_ack")
	require.NoError(t, err)
	raw, err := s.GetLastMsgForSubject(ctx, b.Subject("h"))
	require.NoError(t, err)
	require.Equal(t, rev, raw.Sequence)
	require.Equal(t, "5s", raw.Header.Get(jetstream.MsgTTLHeader))
	require.Equal(t, "id-1", raw.Header.Get(jetstream.MsgIDHeader))
	require.Equal(t, "0", raw.Header.Get(jetstream.ExpectedLastSubjSeqHeader))

	// The same write again is refused: the error reaches the caller as
	// nats.go would return it, mapped to ErrConflict.
	_, err = b.send(context.Background(), &nats.Msg{Subject: b.Subject("k"), Data: []byte("w")}, casCond(0, 0, ""))
	require.ErrorIs(t, err, ErrConflict)
	var apiErr *jetstream.APIError
	require.ErrorAs(t, err, &apiErr)
	require.EqualValues(t, codeWrongLastSeq, apiErr.ErrorCode)

	// A duplicate (same Nats-Msg-Id) is acknowledged with the original
	// sequence through the full decoder.
	first, err := b.send(ctx, &nats.Msg{Subject: b.Subject("d"), Data: []byte("v")}, cond{id: "dup-1"})
	require.NoError(t, err)
	again, err := b.send(ctx, &nats.Msg{Subject: b.Subject("d"), Data: []byte("v")}, cond{id: "dup-1"})
	require.NoError(t, err)
	require.Equal(t, first, again)
}
