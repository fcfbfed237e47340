package kvlease_test

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"
)

func decodeTokenJSON(t *testing.T, text []byte) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(string(text[len("kvlease1:"):]))
	require.NoError(t, err)
	return string(b)
}
