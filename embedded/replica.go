package embedded

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/server"
)

// Replica is what one server holds of a stream: its own copy, which on a
// follower may lag the leader. Tests use it to see that a restarted node
// has caught up, something no client request can show, because stream
// info and non-direct message gets are answered by the leader.
type Replica struct {
	// Msgs, FirstSeq and LastSeq describe the messages this server has
	// stored. For a KV bucket's stream LastSeq is the bucket's latest
	// revision as far as this server knows.
	Msgs     uint64
	FirstSeq uint64
	LastSeq  uint64
	// Leader reports whether this server currently leads the stream.
	Leader bool
}

// StreamReplica returns this server's own copy of stream (in the global
// account) without any network request. It returns ErrNoStream when the
// server holds no replica of stream (yet).
func (s *Server) StreamReplica(stream string) (Replica, error) {
	if s.closing.Load() {
		return Replica{}, ErrShutdown
	}
	acc, err := s.ns.JszAccount(&server.JSzOptions{Account: jsAccount, Streams: true})
	if err != nil {
		return Replica{}, fmt.Errorf("embedded: jsz: %w", err)
	}
	for _, d := range acc.Streams {
		if d.Name != stream {
			continue
		}
		r := Replica{Msgs: d.State.Msgs, FirstSeq: d.State.FirstSeq, LastSeq: d.State.LastSeq}
		// A server outside a cluster leads every stream it holds.
		r.Leader = !s.ns.JetStreamIsClustered() || s.ns.JetStreamIsStreamLeader(jsAccount, stream)
		return r, nil
	}
	return Replica{}, fmt.Errorf("%w: %q", ErrNoStream, stream)
}
