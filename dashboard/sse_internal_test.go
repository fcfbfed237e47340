package dashboard

import (
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stalledWriter is a ResponseWriter whose client stopped reading after
// the first write: every later write blocks until its write deadline (or
// the test's end) and then fails, as a socket's does.
type stalledWriter struct {
	hdr      http.Header
	mu       sync.Mutex
	writes   int
	deadline time.Time
	end      chan struct{}
}

func (w *stalledWriter) Header() http.Header { return w.hdr }
func (w *stalledWriter) WriteHeader(int)     {}
func (w *stalledWriter) Flush()              {}

func (w *stalledWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deadline = t
	return nil
}

func (w *stalledWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes++
	first, d := w.writes == 1, w.deadline
	w.mu.Unlock()
	if first {
		return len(p), nil
	}
	var after <-chan time.Time
	if !d.IsZero() {
		after = time.After(time.Until(d))
	}
	select {
	case <-after:
	case <-w.end:
	}
	return 0, os.ErrDeadlineExceeded
}

// A browser that stops reading is disconnected after the write bound,
// which frees its goroutine, its buffer and its stream slot.
func TestSSEStalledReaderIsDroppedAfterWriteTimeout(t *testing.T) {
	h := &Handler{cfg: Config{MaxStreams: 1, StreamWriteTimeout: 100 * time.Millisecond}, broker: newBroker()}
	w := &stalledWriter{hdr: http.Header{}, end: make(chan struct{})}
	t.Cleanup(func() { close(w.end) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.sse(w, httptest.NewRequest(http.MethodGet, "/sse", nil))
	}()
	// The hello is written after the stream subscribed to the broker: a
	// push published before that would reach no one.
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.writes >= 1
	}, 5*time.Second, 10*time.Millisecond)
	h.broker.publish(push{Type: "ledger", Data: []byte("{}")})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream of a reader that stopped reading is still open")
	}
	require.Zero(t, h.streams.Load())
}
