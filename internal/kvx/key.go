package kvx

import (
	"fmt"
	"strings"
)

// ValidKey reports whether key can be stored in a KV bucket: one or more
// of [-/_=.a-zA-Z0-9], not starting or ending with '.', no empty token.
func ValidKey(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' || strings.Contains(key, "..") {
		return false
	}
	for i := 0; i < len(key); i++ {
		if !keyByte(key[i]) {
			return false
		}
	}
	return true
}

func keyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '/' || c == '_' || c == '=' || c == '.'
}

// CheckKey returns ErrInvalidKey (naming the key) when key is not valid.
func CheckKey(key string) error {
	if !ValidKey(key) {
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	return nil
}
