package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/natscoord/natscoord/kvledger/worker"
)

// Environment variables a command run by `natscoord work` finds set.
const (
	envTaskKey         = "NATSCOORD_TASK_KEY"
	envTaskKind        = "NATSCOORD_TASK_KIND"
	envTaskFence       = "NATSCOORD_TASK_FENCE"
	envTaskAttempt     = "NATSCOORD_TASK_ATTEMPT"
	envTaskMaxAttempts = "NATSCOORD_TASK_MAX_ATTEMPTS"
	envTaskBucket      = "NATSCOORD_TASK_BUCKET"
)

// stderrTail is how much of a command's stderr a failed attempt keeps as
// its error text (the end, where the reason usually is).
const stderrTail = 512

// execTask is what one run of the command gets to know about its task.
type execTask struct {
	key, kind, bucket string
	fence             uint64
	attempt, max      int
	payload           []byte // the task's JSON payload; nil: none
}

// env is the task's part of the command's environment.
func (t execTask) env() []string {
	return []string{
		envTaskKey + "=" + t.key,
		envTaskKind + "=" + t.kind,
		envTaskFence + "=" + strconv.FormatUint(t.fence, 10),
		envTaskAttempt + "=" + strconv.Itoa(t.attempt),
		envTaskMaxAttempts + "=" + strconv.Itoa(t.max),
		envTaskBucket + "=" + t.bucket,
	}
}

// commandRunner runs a task as a child process: the payload on its stdin,
// the task in its environment, its stdout (up to limit bytes) kept as the
// result and its stderr passed through. When the run's context ends (the
// claim was lost, the task cancelled, or the worker drains), the child's
// process group gets SIGTERM, and SIGKILL grace later if it is still
// running; when it exits, so does what it left running. On Linux the
// child is a supervisor that also does so if the worker dies (see
// work_supervise_linux.go).
type commandRunner struct {
	argv  []string
	grace time.Duration
	// orphanGrace is the grace when the worker died (a third of the
	// claim's TTL at most; see work_supervise_linux.go).
	orphanGrace time.Duration
	limit       int       // bytes of stdout kept
	stderr      io.Writer // where the child's stderr goes (shared: lines from concurrent tasks interleave)
	env         []string  // the worker's environment, secrets removed (commandEnv)
	// startFailed gets the first *commandStartError: the worker stops.
	startFailed chan error
	// snoozeExit, when not 0, is the exit status that snoozes the task
	// for snooze (work --snooze-exit, --snooze).
	snoozeExit int
	snooze     time.Duration
}

// exitCodeError is a command that ran and exited non-zero (or was killed
// by a signal: code -1).
type exitCodeError struct {
	code   int
	signal string
	tail   string
}

func (e *exitCodeError) Error() string {
	var s string
	if e.signal != "" {
		s = "command killed by " + e.signal
	} else {
		s = "command exited with status " + strconv.Itoa(e.code)
	}
	if e.tail != "" {
		s += ": " + e.tail
	}
	return s
}

// errStart marks a command that could not be started at all (missing
// binary, no permission): the worker's fault, not the task's, so the
// handler gives the task back (worker.GiveBack) and the worker stops.
var errStart = errors.New("cannot start the command")

// commandStartError is a command that could not be started; code is the
// shell's: 127 when it was not found, 126 when it could not be run.
type commandStartError struct {
	code int
	msg  string
}

func (e *commandStartError) Error() string        { return errStart.Error() + ": " + e.msg }
func (e *commandStartError) Is(target error) bool { return target == errStart }

// checkCommand finds name as the command would be started, before the
// worker claims anything: a mistyped or non-executable command exits 127
// or 126, as `lock` does, instead of failing every task of its kind.
func checkCommand(name string) error {
	if _, err := exec.LookPath(name); err != nil {
		return exitError{code: startErrorCode(err), err: fmt.Errorf("work: %w", err)}
	}
	return nil
}

// run runs the command once for t. It returns the result (nil when stdout
// was empty) and nil when the command exited 0; an *exitCodeError when it
// exited otherwise; a *commandStartError when it could not start; ctx's
// error when ctx ended first (the command has been stopped by then). In
// every case, what the command left running has been stopped as well.
func (r *commandRunner) run(ctx context.Context, t execTask) (json.RawMessage, bool, error) {
	cmd, sup, err := commandFor(r.argv, r.grace, r.orphanGrace)
	if err != nil {
		return nil, false, err
	}
	cmd.Env = append(append([]string(nil), r.env...), t.env()...)
	cmd.Stdin = bytes.NewReader(t.payload)
	out := &boundedBuffer{limit: r.limit}
	cmd.Stdout = out
	tail := &tailWriter{w: r.stderr, max: stderrTail}
	cmd.Stderr = tail
	// WaitDelay bounds the wait for pipes a leftover process still holds
	// open after the command itself exited.
	cmd.WaitDelay = time.Second
	// The supervisor's parent-death signal follows the thread that
	// started it (childProcAttr).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		sup.abort()
		return nil, false, sup.startError(r.argv[0], err)
	}
	sup.started()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-ctx.Done():
		werr = r.stop(cmd.Process.Pid, waited, errors.Is(context.Cause(ctx), worker.ErrClaimLost))
		sup.ended(cmd.Process.Pid)
		return nil, false, fmt.Errorf("%w (command stopped: %v)", context.Cause(ctx), exitText(werr))
	}
	st, ok := sup.ended(cmd.Process.Pid)
	switch {
	case ok && st.start != nil:
		return nil, false, st.start
	case ok && st.signal != 0:
		return nil, false, &exitCodeError{code: -1, signal: st.signal.String(), tail: tail.String()}
	case ok && st.code != 0:
		return nil, false, &exitCodeError{code: st.code, tail: tail.String()}
	case !ok && werr != nil && !errors.Is(werr, exec.ErrWaitDelay):
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return nil, false, werr
		}
		e := &exitCodeError{code: ee.ExitCode(), tail: tail.String()}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.signal = ws.Signal().String()
		}
		return nil, false, e
	}
	res, cut := resultOf(out.Bytes(), r.limit)
	return res, cut || out.dropped > 0, nil
}

// childStatus is how the command ended, as its supervisor saw it.
type childStatus struct {
	code   int
	signal syscall.Signal
	start  *commandStartError
}

// stop sends SIGTERM to the process group of what was started (the
// command, or its supervisor, which passes it on), SIGKILL after the
// grace period (and stopMargin, the supervisor's time to do the same and
// report), and returns the wait error once it has exited: on Linux,
// once the supervisor has reaped the command's whole tree. When the
// claim is lost (lost), there is no grace: the server may expire the
// worker's lease as soon as kvlease.Margin(ttl) after the handler's
// context ended, and another worker then starts the task, so the tree
// is killed at once (killNowSignal).
func (r *commandRunner) stop(pid int, waited <-chan error, lost bool) error {
	sig, grace := syscall.SIGTERM, r.grace
	if lost {
		sig, grace = killNowSignal, 0
	}
	_ = syscall.Kill(-pid, sig)
	t := time.NewTimer(grace + stopMargin)
	defer t.Stop()
	select {
	case err := <-waited:
		return err
	case <-t.C:
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return <-waited
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// boundedBuffer keeps the first limit bytes written and counts the rest,
// so a chatty command never blocks on a full pipe nor fills memory.
type boundedBuffer struct {
	buf     bytes.Buffer
	limit   int
	dropped int64
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := b.limit - b.buf.Len()
	if room >= len(p) {
		return b.buf.Write(p)
	}
	if room > 0 {
		b.buf.Write(p[:room])
	}
	b.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

func (b *boundedBuffer) Bytes() []byte { return b.buf.Bytes() }

// tailWriter passes everything to w (under a lock shared by every
// tailWriter on w, so concurrent commands' writes do not tear) and keeps
// the last max bytes.
type tailWriter struct {
	w    io.Writer
	max  int
	tail []byte
}

var stderrMu sync.Mutex

func (t *tailWriter) Write(p []byte) (int, error) {
	if t.w != nil {
		stderrMu.Lock()
		_, _ = t.w.Write(p)
		stderrMu.Unlock()
	}
	t.tail = append(t.tail, p...)
	if len(t.tail) > t.max {
		t.tail = append(t.tail[:0], t.tail[len(t.tail)-t.max:]...)
	}
	return len(p), nil
}

// String is the kept tail on one line, cut at a rune boundary.
func (t *tailWriter) String() string {
	b := t.tail
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return strings.Join(strings.Fields(string(b)), " ")
}
