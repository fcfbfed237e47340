package embedded

import "errors"

// Errors returned by this package. Match them with errors.Is.
var (
	// ErrInvalidOptions wraps every validation failure of Options.
	ErrInvalidOptions = errors.New("embedded: invalid options")
	// ErrNotReady means the server did not become ready for connections
	// within Options.ReadyTimeout (for example because its port is taken).
	ErrNotReady = errors.New("embedded: server not ready")
	// ErrShutdown is returned by calls on a server that was shut down.
	ErrShutdown = errors.New("embedded: server is shut down")
	// ErrNoMetaLeader means a cluster did not elect a JetStream meta leader
	// within its ready timeout.
	ErrNoMetaLeader = errors.New("embedded: no JetStream meta leader")
	// ErrNoLeader means no running cluster node leads the stream.
	ErrNoLeader = errors.New("embedded: stream has no leader")
	// ErrNoStream means the stream has no replica on this server.
	ErrNoStream = errors.New("embedded: stream not on this server")
)
