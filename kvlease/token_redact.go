package kvlease

import (
	"encoding/json"
	"log/slog"
)

// LogValue implements slog.LogValuer: a token logged with any slog handler
// shows its family, key, fence and TTL, and never its secret. Without it,
// slog's Text and JSON handlers would encode the token through
// MarshalText, which reveals the secret.
func (t Token[K]) LogValue() slog.Value {
	if t.IsZero() {
		return slog.StringValue("kvlease.Token{}")
	}
	return slog.GroupValue(
		slog.String("family", string(t.family)),
		slog.String("key", t.key),
		slog.Uint64("fence", t.fence),
		slog.Duration("ttl", t.ttl),
		slog.String("secret", "REDACTED"),
	)
}

// MarshalJSON encodes the token redacted, as String does, so that a
// token inside a struct that is logged or marshalled never carries its
// secret out. Handing a token to another process is an explicit act:
// send the text of MarshalText (a JSON string field holding it works).
func (t Token[K]) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.String())
}
