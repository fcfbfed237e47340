package natstest

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The goroutine-leak check. It is natscoord's own rather than a library's
// so that no test-only module reaches the go.mod that importers read: a
// package's tests may only depend on what its users already depend on.
//
// A leak is any goroutine still running once the work that started it has
// ended, except the testing framework's own and those a caller recorded as
// present beforehand (IgnoreCurrent). Goroutines take a moment to finish
// after Close returns (a reader sees its connection closed, a timer fires),
// so the check retries for leakSettle before it fails.

// leakSettle bounds how long the check waits for goroutines to end.
const leakSettle = 5 * time.Second

// Baseline is a set of goroutines present at one moment, to be ignored by
// a later VerifyNone.
type Baseline struct{ ids map[int]bool }

// IgnoreCurrent records the goroutines running now, so that VerifyNone
// reports only those started after it.
func IgnoreCurrent() Baseline {
	b := Baseline{ids: map[int]bool{}}
	for _, g := range liveGoroutines() {
		b.ids[g.id] = true
	}
	return b
}

// VerifyNone fails t when goroutines other than the test's own, the
// testing framework's and those in the optional baseline are still running
// after leakSettle.
func VerifyNone(t testing.TB, baseline ...Baseline) {
	t.Helper()
	if left := settle(leakSettle, baseline...); len(left) > 0 {
		t.Fatalf("natstest: %d goroutine(s) leaked:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// VerifyTestMain runs the package's tests and then fails the binary when a
// goroutine outlived them. Call it from every TestMain:
//
//	func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }
func VerifyTestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if left := settle(leakSettle); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "natstest: %d goroutine(s) leaked after the tests:\n\n%s\n", len(left), strings.Join(left, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// settle returns the stacks of leaked goroutines, waiting up to wait,
// with growing pauses, for them to end.
func settle(wait time.Duration, baseline ...Baseline) []string {
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		var left []string
		for _, g := range liveGoroutines() {
			if !ignored(g, baseline) {
				left = append(left, g.stack)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}

type goroutine struct {
	id    int
	top   string // the function running now
	stack string
}

func ignored(g goroutine, baseline []Baseline) bool {
	for _, b := range baseline {
		if b.ids[g.id] {
			return true
		}
	}
	return frameworkGoroutine(g)
}

// frameworkGoroutine reports goroutines that exist whatever the code under
// test does: those waiting inside the testing package (the main test
// runner, parallel tests parked until the serial ones end) and the
// runtime's signal handling.
func frameworkGoroutine(g goroutine) bool {
	switch g.top {
	case "os/signal.signal_recv", "os/signal.loop", "runtime.ensureSigM", "runtime.goexit":
		return true
	}
	return strings.HasPrefix(g.top, "testing.")
}

// liveGoroutines parses runtime.Stack's dump of every goroutine but the
// caller's.
func liveGoroutines() []goroutine {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	blocks := bytes.Split(buf, []byte("\n\n"))
	out := make([]goroutine, 0, len(blocks))
	for i, blk := range blocks {
		if i == 0 { // the calling goroutine always comes first
			continue
		}
		if g, ok := parseGoroutine(string(blk)); ok {
			out = append(out, g)
		}
	}
	return out
}

// parseGoroutine reads "goroutine N [state]:\nfunc(args)\n\tfile:line…".
func parseGoroutine(s string) (goroutine, bool) {
	header, rest, ok := strings.Cut(s, "\n")
	if !ok || !strings.HasPrefix(header, "goroutine ") {
		return goroutine{}, false
	}
	idText, _, _ := strings.Cut(strings.TrimPrefix(header, "goroutine "), " ")
	id, err := strconv.Atoi(idText)
	if err != nil {
		return goroutine{}, false
	}
	fn, _, _ := strings.Cut(rest, "\n")
	if i := strings.LastIndexByte(fn, '('); i > 0 {
		fn = fn[:i]
	}
	return goroutine{id: id, top: fn, stack: s}, true
}
