package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactURLs(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":            "nats://127.0.0.1:4222",
		"nats://bob:pw@127.0.0.1:4222":     "nats://***@127.0.0.1:4222",
		"nats://tok@h:1,tls://u:p@h:2,h:3": "nats://***@h:1,tls://***@h:2,h:3",
		"bob:pw@h:4222":                    "***@h:4222",
		"nats://u:p/w@s@[::1]:4222":        "nats://***@[::1]:4222",
		"nats://@h":                        "nats://***@h",
		"":                                 "",
	} {
		require.Equal(t, want, redactURLs(in), in)
	}
	c := connFlags{server: "nats://u:p/w@s@h:1,nats://tok@h:2"}
	require.Equal(t, `connect "nats://***@h:1": refused by ***@h:2`, c.redact(`connect "nats://u:p/w@s@h:1": refused by tok@h:2`))
}
