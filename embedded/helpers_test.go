package embedded_test

import "github.com/nats-io/nats.go/jetstream"

func jetstreamKV(name string) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: name}
}
