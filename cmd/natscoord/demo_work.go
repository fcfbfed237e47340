package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The demo's shell side is the README's "start here": `natscoord work`
// running a shell command as a task. The demo starts two such workers as
// its own children (its own executable), against the same server.

// demoShellScript is the command the `natscoord work` processes run for
// each "shell" task: the arguments arrive as JSON on stdin, the task's
// key and attempt in the environment, and stdout becomes the result. A
// task submitted with "hang" hangs on its first attempt: the demo kills
// that worker.
const demoShellScript = `case "$(cat)" in *'"hang":true'*) [ "$NATSCOORD_TASK_ATTEMPT" = 1 ] && sleep 60;; esac; echo "$NATSCOORD_TASK_KEY done"`

// demoShellTTL is the claim TTL of the `natscoord work` processes: how
// long after a worker dies its task is taken over.
const demoShellTTL = 2 * time.Second

// demoCanCrash says whether the demo kills a worker mid-task. Only on
// Linux does `natscoord work` stop its command's whole process tree when
// the worker itself is killed (its supervisor); elsewhere the hung
// command would run on beside the worker that takes the task over.
const demoCanCrash = runtime.GOOS == "linux"

// demoProc is one `natscoord work` child process.
type demoProc struct {
	name string
	proc *os.Process
	out  boundedBuffer // its stdout and stderr (one writer: exec writes it from one goroutine), read once it exited
	done chan struct{}
	err  error // how it ended: set before done is closed
}

// demoChildConn is how a child connects: its environment (the server URL
// and credentials, never in argv) and its connection flags.
type demoChildConn struct {
	env  []string
	args []string
}

// workArgs is the command line of worker name.
func (run *demoRun) workArgs(name string, conn demoChildConn) []string {
	args := []string{"work", "--kind", shellStep{}.Kind(), "--name", name,
		"--bucket", run.bucket, "--lease-bucket", run.claimsBucket(),
		"--ttl", demoShellTTL.String(), "--grace", "1s", "--drain", "1s", "--no-schedules"}
	args = append(args, conn.args...)
	return append(args, "--", "sh", "-c", demoShellScript)
}

// startDemoProcs starts n `natscoord work` processes. The returned
// function stops those still running (SIGTERM: they drain; SIGKILL if
// one has not exited within a few seconds).
func startDemoProcs(run *demoRun, conn demoChildConn, n int) (map[string]*demoProc, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("demo: find natscoord's own executable: %w", err)
	}
	procs := make(map[string]*demoProc, n)
	stopAll := func() {
		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Go(func() { p.stop(5 * time.Second) })
		}
		wg.Wait()
	}
	for i := range n {
		name := fmt.Sprintf("work-%d", i+1)
		p, err := startDemoProc(exe, name, run.workArgs(name, conn), conn.env)
		if err != nil {
			stopAll()
			return nil, nil, err
		}
		procs[name] = p
	}
	return procs, stopAll, nil
}

func startDemoProc(exe, name string, args, env []string) (*demoProc, error) {
	p := &demoProc{name: name, out: boundedBuffer{limit: 4096}, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal (Linux) follows the thread that started
		// the child: this goroutine holds it until the child has exited,
		// so the child dies with the demo however the demo ends.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c := exec.Command(exe, args...)
		c.Env = env
		c.Stdout, c.Stderr = &p.out, &p.out
		c.SysProcAttr = demoProcAttr()
		if err := c.Start(); err != nil {
			started <- fmt.Errorf("demo: start %s: %w", name, err)
			return
		}
		p.proc = c.Process
		started <- nil
		p.err = c.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// kill kills the worker at once, as a crash would.
func (p *demoProc) kill() { _ = p.proc.Kill() }

// stop asks the worker to drain and exit, and kills it after wait.
func (p *demoProc) stop(wait time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = demoInterrupt(p.proc)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.proc.Kill()
		<-p.done
	}
}

// exited returns the worker's end as an error when it exited by itself
// (it should run until the demo stops it), with the last of its output.
func (p *demoProc) exited() error {
	out := strings.TrimSpace(string(p.out.Bytes()))
	if out != "" {
		out = ": " + out
	}
	return fmt.Errorf("%s (natscoord work) exited: %v%s", p.name, p.err, out)
}

// childConn is how the demo's `natscoord work` children reach the server
// the demo uses: the URL and credentials in their environment (where the
// CLI reads them, and which `work` strips from the commands it runs), the
// file-based settings as flags. The demo's own NATS_* and NATSCOORD_*
// variables (a dashboard token, say) are not passed on (commandEnv).
func (c *connFlags) childConn(url string) (demoChildConn, error) {
	password, err := c.password.resolve()
	if err != nil {
		return demoChildConn{}, err
	}
	user := c.user
	if user == "" {
		user = os.Getenv("NATS_USER")
	}
	out := demoChildConn{env: append(commandEnv(os.Environ(), false), "NATS_URL="+url)}
	if user != "" {
		out.env = append(out.env, "NATS_USER="+user)
	}
	if password != "" {
		out.env = append(out.env, "NATS_PASSWORD="+password)
	}
	for _, f := range []struct{ flag, value string }{
		{"--creds", c.creds}, {"--tlsca", c.tlsCA}, {"--tlscert", c.tlsCert}, {"--tlskey", c.tlsKey},
	} {
		if f.value != "" {
			out.args = append(out.args, f.flag, f.value)
		}
	}
	if c.timeout > 0 {
		out.args = append(out.args, "--timeout", c.timeout.String())
	}
	return out, nil
}
