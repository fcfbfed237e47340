package dashtest

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// SSEStream is an open /sse response read line by line. The reader blocks
// rather than drop a line while its buffer is full; it ends at Cleanup.
type SSEStream struct {
	lines chan string
}

// OpenSSE opens the dashboard's event stream and returns once its hello
// event arrived. The reader ends by t.Cleanup. With $SSE_DEBUG set, every
// line read is logged.
func (e *Env) OpenSSE(t testing.TB) *SSEStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.Base+"/sse", nil)
	require.NoError(t, err)
	resp, err := e.Server.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &SSEStream{lines: make(chan string, 1024)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			// Never drop a line: WaitFor pairs an "event:" line with
			// the one after it. A reader that stops reading ends with
			// the stream's context.
			select {
			case s.lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
	})
	s.WaitFor(t, "event: hello")
	return s
}

// WaitFor returns the line after the first line containing want (the data
// line of an event) whose data contains every alsoData, failing after a
// bound.
func (s *SSEStream) WaitFor(t testing.TB, want string, alsoData ...string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l := <-s.lines:
			if os.Getenv("SSE_DEBUG") != "" {
				t.Log("sse:", l)
			}
			if !strings.Contains(l, want) {
				continue
			}
			data := natstest.Recv(t, s.lines, 5*time.Second, "data line")
			ok := true
			for _, d := range alsoData {
				ok = ok && strings.Contains(data, d)
			}
			if ok {
				return data
			}
		case <-timeout:
			t.Fatalf("no %q with %q on the event stream", want, alsoData)
			return ""
		}
	}
}

// WaitAll waits until, for each matcher (an event line and data
// substrings), a matching event arrived, in any order.
func (s *SSEStream) WaitAll(t testing.TB, matchers ...[]string) {
	t.Helper()
	left := slices.Clone(matchers)
	timeout := time.After(10 * time.Second)
	var ev string
	for len(left) > 0 {
		select {
		case l := <-s.lines:
			if strings.HasPrefix(l, "event: ") {
				ev = l
				continue
			}
			left = slices.DeleteFunc(left, func(m []string) bool {
				if !strings.Contains(ev, m[0]) {
					return false
				}
				for _, d := range m[1:] {
					if !strings.Contains(l, d) {
						return false
					}
				}
				return true
			})
		case <-timeout:
			t.Fatalf("events not seen: %q", left)
		}
	}
}
