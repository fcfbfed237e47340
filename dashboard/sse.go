package dashboard

import (
	"fmt"
	"net/http"

	"github.com/natscoord/natscoord/internal/clock"
)

// sse streams pushes to one browser until it leaves, stops reading (a
// write takes longer than Config.StreamWriteTimeout) or the handler
// closes. Each message is "event: <type>" and one "data:" line of JSON.
// At most Config.MaxStreams are open at once.
func (h *Handler) sse(w http.ResponseWriter, r *http.Request) {
	if _, ok := w.(http.Flusher); !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	if n := h.streams.Add(1); n > int64(h.cfg.MaxStreams) {
		h.streams.Add(-1)
		w.Header().Set("Retry-After", "10")
		http.Error(w, fmt.Sprintf("too many open event streams (at most %d)", h.cfg.MaxStreams), http.StatusServiceUnavailable)
		return
	}
	defer h.streams.Add(-1)
	rc := http.NewResponseController(w)
	ch, unsubscribe := h.broker.subscribe()
	defer unsubscribe()
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	// send writes and flushes one message within the write bound (a
	// network deadline: real time).
	send := func(typ string, data []byte) bool {
		if err := rc.SetWriteDeadline(clock.Real().Now().Add(h.cfg.StreamWriteTimeout)); err != nil {
			return false // a writer without deadlines could block for ever
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// The first message tells the page it is live (and resync after a
	// reconnect), and whether NATS is reachable.
	if !send("hello", natsJSON(h.natsUp())) {
		return
	}
	for {
		select {
		case p, ok := <-ch:
			if !ok || !send(p.Type, p.Data) {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}
