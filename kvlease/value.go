package kvlease

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// secretBytes is the size of a guard's owner secret.
const secretBytes = 32

type secret [secretBytes]byte

func newSecret() secret {
	var s secret
	_, _ = rand.Read(s[:]) // crypto/rand.Read never fails (Go 1.24+)
	return s
}

// hash is what the bucket stores: reading the bucket reveals who holds a
// lease but not the secret a transfer token needs.
func (s secret) hash() string {
	h := sha256.Sum256(s[:])
	return hex.EncodeToString(h[:])
}

// Holder describes the process holding a lease, as stored in its value.
type Holder struct {
	// ID is the holder's public id (Config.Holder).
	ID string `json:"holder"`
	// Host and PID locate the process.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Acquired is the holder's clock when it acquired (or restored) the
	// lease. Informational only: no process judges a lease by it.
	Acquired time.Time `json:"acquired"`
	// TTL is the lease's requested TTL in milliseconds.
	TTLMillis int64 `json:"ttl_ms"`
	// OwnerHash is the hex SHA-256 of the owner secret (never the secret).
	OwnerHash string `json:"owner"`
	// Revision is the lease key's revision when read (not stored).
	Revision uint64 `json:"-"`
}

// TTL returns the lease's requested TTL.
func (h Holder) TTL() time.Duration { return time.Duration(h.TTLMillis) * time.Millisecond }

func (m *Manager) encodeValue(ttl time.Duration, ownerHash string) []byte {
	v, err := json.Marshal(Holder{
		ID: m.cfg.Holder, Host: m.host, PID: m.pid, Acquired: time.Now().UTC(),
		TTLMillis: ttl.Milliseconds(), OwnerHash: ownerHash,
	})
	if err != nil {
		panic(fmt.Sprintf("kvlease: encoding a lease value cannot fail: %v", err))
	}
	return v
}

func decodeValue(b []byte) (Holder, error) {
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return Holder{}, fmt.Errorf("kvlease: lease value: %w", err)
	}
	return h, nil
}

// ownedBy reports whether a stored value names ownerHash as its owner.
func ownedBy(value []byte, ownerHash string) bool {
	h, err := decodeValue(value)
	if err != nil || len(h.OwnerHash) != len(ownerHash) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(h.OwnerHash), []byte(ownerHash)) == 1
}
