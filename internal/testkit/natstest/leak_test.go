package natstest

import (
	"strings"
	"testing"
	"time"
)

func TestLeakCheckFindsAGoroutineAndForgetsItOnceEnded(t *testing.T) {
	stop := make(chan struct{})
	go leakyWaiter(stop)
	left := settle(200 * time.Millisecond)
	if len(left) != 1 || !strings.Contains(left[0], "leakyWaiter") {
		t.Fatalf("want the waiter reported once, got %d stacks:\n%s", len(left), strings.Join(left, "\n\n"))
	}
	close(stop)
	if left := settle(leakSettle); len(left) != 0 {
		t.Fatalf("an ended goroutine is still reported:\n%s", strings.Join(left, "\n\n"))
	}
}

func TestLeakCheckBaselineIgnoresEarlierGoroutines(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go leakyWaiter(stop)
	base := IgnoreCurrent()
	if left := settle(100*time.Millisecond, base); len(left) != 0 {
		t.Fatalf("a goroutine in the baseline is reported:\n%s", strings.Join(left, "\n\n"))
	}
}

func leakyWaiter(stop chan struct{}) { <-stop }
