package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// On Linux, `natscoord work` starts each command under a supervisor: the
// natscoord binary itself (/proc/self/exe, so a binary replaced on disk
// still runs as the same version), started with superviseArg. Nothing the
// command starts may outlive it, nor the worker:
//
//   - the supervisor gets the parent-death signal of `lock` and `elect`
//     (childProcAttr): SIGTERM when the worker dies, even by SIGKILL;
//   - it is a child subreaper (PR_SET_CHILD_SUBREAPER), so whatever the
//     command starts, and leaves behind when it exits, becomes its child
//     rather than init's, even after setsid;
//   - when it gets SIGTERM (the worker stops the command, or died), it
//     sends SIGTERM to the command's process group and to every child it
//     has, and SIGKILL grace later; when the command exits, it does the
//     same to what the command left behind; it exits once it has no child
//     left, so every descendant is gone by then;
//   - when it gets killNowSignal (the worker lost the claim: another
//     worker may start the task any moment), it sends SIGKILL to all of
//     them at once, with no grace;
//   - when the worker died, the grace is at most a third of the claim's
//     TTL (orphan grace): the claim's lease outlives the worker by up to
//     the TTL, then another worker takes the task over, and it must not
//     find the old copy still running;
//   - the command gets the parent-death signal SIGKILL from it, in case
//     the supervisor itself is killed;
//   - it reports how the command ended on a pipe (fd 3): "exit N",
//     "signal N" or "start CODE MESSAGE", so that a command that cannot be
//     started is told apart from one that exits 127.
//
// A parent-death signal alone reaches only the direct child: a shell's
// `sleep 300 &` would run on after the worker died, and a second worker
// taking the task over would run a second copy beside it.

// superviseArg is the first argument of a supervisor: superviseArg GRACE
// ORPHAN-GRACE -- CMD ARGS...
const superviseArg = "__natscoord-work-supervisor"

// stopMargin is the time the worker gives the supervisor, after grace,
// to kill what is left and report, before it kills the supervisor.
const stopMargin = 2 * time.Second

// killNowSignal asks the supervisor to kill the command's tree at once.
const killNowSignal = syscall.SIGUSR1

// maybeSupervise runs the supervisor and exits when natscoord was started
// as one; main and TestMain call it first.
func maybeSupervise() {
	if len(os.Args) > 1 && os.Args[1] == superviseArg {
		os.Exit(superviseMain(os.Args[2:]))
	}
}

// supervision is the worker's end of one supervisor.
type supervision struct {
	r, w *os.File // the status pipe
}

// commandFor returns the (unstarted) supervisor of argv.
func commandFor(argv []string, grace, orphanGrace time.Duration) (*exec.Cmd, *supervision, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("natscoord work: status pipe: %w", err)
	}
	cmd := exec.Command("/proc/self/exe", append([]string{superviseArg, grace.String(), orphanGrace.String(), "--"}, argv...)...)
	cmd.Args[0] = "natscoord"
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = childProcAttr()
	return cmd, &supervision{r: r, w: w}, nil
}

// startError is what a failed Start of the supervisor means: the
// worker's process could not fork (EAGAIN, ENOMEM), not the command
// missing, which the supervisor reports itself (childStatus.start). It
// is a failed attempt like any other, retried after its backoff, and the
// worker goes on.
func (*supervision) startError(argv0 string, err error) error {
	return fmt.Errorf("start the supervisor of %q: %w", argv0, err)
}

// abort closes the pipe of a supervisor that did not start.
func (s *supervision) abort() { _ = s.r.Close(); _ = s.w.Close() }

// started drops the worker's copy of the write end: the read end sees
// EOF once the supervisor has exited.
func (s *supervision) started() { _ = s.w.Close() }

// ended reads the report of the supervisor, which has exited; false when
// it made none (it was killed).
func (s *supervision) ended(int) (childStatus, bool) {
	defer s.r.Close()
	// The supervisor has exited, and the command never had the pipe
	// (close-on-exec): the read ends at once; the deadline is a bound.
	_ = s.r.SetReadDeadline(wall.Now().Add(time.Second))
	line, _ := bufio.NewReader(s.r).ReadString('\n')
	f := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 3)
	var st childStatus
	var err error
	switch {
	case len(f) == 2 && f[0] == "exit":
		st.code, err = strconv.Atoi(f[1])
	case len(f) == 2 && f[0] == "signal":
		var n int
		n, err = strconv.Atoi(f[1])
		st.signal = syscall.Signal(n)
	case len(f) == 3 && f[0] == "start":
		st.start = &commandStartError{msg: f[2]}
		st.start.code, err = strconv.Atoi(f[1])
	default:
		return st, false
	}
	return st, err == nil
}

// superviseMain is the supervisor: args are GRACE ORPHAN-GRACE -- CMD
// ARGS...
func superviseMain(args []string) int {
	ppid := os.Getppid()
	report := os.NewFile(3, "status")
	syscall.CloseOnExec(3)
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "natscoord: internal supervisor of natscoord work; not for use on its own")
		return 2
	}
	grace, err := time.ParseDuration(args[0])
	orphanGrace, oerr := time.ParseDuration(args[1])
	if err != nil || oerr != nil || grace <= 0 || orphanGrace <= 0 {
		fmt.Fprintln(os.Stderr, "natscoord: supervisor: bad grace", args[0], args[1])
		return 2
	}
	argv := args[3:]
	// A write to the worker's pipes once it died must not kill the
	// supervisor before it has stopped the command (a caught signal is
	// reset to its default for the command by exec).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// Orphans of the command's tree become this process's children.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "natscoord: supervisor: PR_SET_CHILD_SUBREAPER: %v\n", errno)
	}
	sigc := make(chan os.Signal, 4)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, killNowSignal)

	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.Start(); err != nil {
		fmt.Fprintf(report, "start %d %s\n", startErrorCode(err), oneLineText(fmt.Sprintf("%q: %v", argv[0], err)))
		return startErrorCode(err)
	}
	t := &tree{pgid: c.Process.Pid, termed: make(map[int]bool)}
	waitc := make(chan error, 1)
	go func() { waitc <- c.Wait() }()
	var (
		mu   sync.Mutex
		kill *time.Timer
	)
	stopping := func() {
		mu.Lock()
		defer mu.Unlock()
		if kill != nil {
			return
		}
		t.signal(syscall.SIGTERM)
		deadline := wall.Now().Add(grace)
		// Whether the worker died is judged when the orphan grace is
		// over, not when the signal came: the parent-death signal comes
		// when the thread that started the supervisor exits, and the
		// supervisor is the worker process's child until its last
		// thread has gone.
		kill = time.AfterFunc(min(grace, orphanGrace), func() {
			mu.Lock()
			defer mu.Unlock()
			if os.Getppid() == ppid && wall.Now().Before(deadline) {
				kill.Reset(deadline.Sub(wall.Now())) // the worker lives and asked for the stop: the whole grace
				return
			}
			t.signal(syscall.SIGKILL)
		})
	}
	for {
		select {
		case s := <-sigc:
			stopping()
			if s == killNowSignal {
				t.signal(syscall.SIGKILL) // and every later signal kills
			}
			continue
		case <-waitc:
		}
		break
	}
	ws, _ := c.ProcessState.Sys().(syscall.WaitStatus)
	// What the command left behind: stopped like the command would have
	// been, within the same grace.
	stopping()
	t.reapAll()
	kill.Stop()
	if ws.Signaled() {
		fmt.Fprintf(report, "signal %d\n", int(ws.Signal()))
		return 128 + int(ws.Signal())
	}
	fmt.Fprintf(report, "exit %d\n", ws.ExitStatus())
	return ws.ExitStatus()
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// tree is what the supervised command started: its process group, and
// every child the supervisor has (the command's orphans).
type tree struct {
	mu      sync.Mutex
	pgid    int
	killing bool
	termed  map[int]bool // children sent SIGTERM already
}

// signal sends sig to the command's group and to each of the
// supervisor's children (SIGTERM once each); after SIGKILL, every later
// call kills.
func (t *tree) signal(sig syscall.Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if sig == syscall.SIGKILL {
		t.killing = true
	}
	if t.killing {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-t.pgid, sig)
	for _, pid := range childrenOf(os.Getpid()) {
		if sig == syscall.SIGTERM && t.termed[pid] {
			continue
		}
		t.termed[pid] = true
		_ = syscall.Kill(pid, sig)
	}
}

// reapAll waits for every child until none is left. A child that dies
// hands its own children to the supervisor (a subreaper) before the
// supervisor learns of its death, so each wait is followed by signalling
// the newcomers.
func (t *tree) reapAll() {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil { // ECHILD: nothing left
			return
		}
		t.signal(syscall.SIGTERM)
	}
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}
