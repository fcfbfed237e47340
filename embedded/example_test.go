package embedded_test

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/embedded"
)

// A single in-process node with a temporary data directory: store a value
// in a KV bucket and read it back.
func ExampleStart() {
	ctx := context.Background()
	s, err := embedded.Start(ctx, embedded.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = s.Shutdown(ctx) }()

	nc, err := s.Connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "config"})
	if err != nil {
		fmt.Println(err)
		return
	}
	rev, _ := kv.Put(ctx, "greeting", []byte("hello"))
	e, _ := kv.Get(ctx, "greeting")
	fmt.Println(string(e.Value()), rev)
	// Output: hello 1
}

// Invalid options are refused before any server starts.
func ExampleStart_invalidOptions() {
	_, err := embedded.Start(context.Background(), embedded.Options{JetStreamMaxStore: -1})
	fmt.Println(err)
	// Output: embedded: invalid options: negative JetStreamMaxStore -1
}
