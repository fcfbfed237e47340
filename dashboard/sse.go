package dashboard

import (
	"fmt"
	"net/http"
)

// sse streams pushes to one browser until it leaves or the handler
// closes. Each message is "event: <type>" and one "data:" line of JSON.
func (h *Handler) sse(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch, unsubscribe := h.broker.subscribe()
	defer unsubscribe()
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The first line tells the page it is live (and resync after a
	// reconnect).
	fmt.Fprintf(w, "event: hello\ndata: {\"nats\":%t}\n\n", h.natsUp())
	fl.Flush()
	for {
		select {
		case p, ok := <-ch:
			if !ok {
				return
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", p.Type, p.Data); err != nil {
				return
			}
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}
