package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/kvledger"
)

// Mount a read-only dashboard under /ui next to other handlers, on an
// in-process server with one admitted task.
func ExampleNew() {
	ctx := context.Background()
	s, err := embedded.Start(ctx, embedded.Options{InProcessOnly: true})
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

	store, _ := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: "jobs"})
	ledger, _ := kvledger.New(store)
	_, _ = ledger.Admit(ctx, "example", "build-1", 1, map[string]any{"kind": "build"}, time.Now())

	h, err := dashboard.New(ctx, dashboard.Config{JS: js, Ledger: "jobs", Prefix: "/ui", ReadOnly: true, Create: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/ui/", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/ui/tasks?kind=build")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(page), `<code>build-1</code>`))
	// Output: 200 true
}
