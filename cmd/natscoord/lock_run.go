package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/natscoord/natscoord/kvlock"
)

// holdFlags are the flags of the commands that hold a lock or lead an
// election while they run.
type holdFlags struct {
	name   string
	ttl    time.Duration
	wait   time.Duration
	holder string
	create bool
	// passSecrets gives the command natscoord's secrets (commandEnv).
	passSecrets bool
}

func (hf *holdFlags) register(f *pflag.FlagSet) {
	f.StringVar(&hf.name, "name", kvlock.DefaultName, "kvlock Config.Name: the family of locks and elections (first key token)")
	f.DurationVar(&hf.ttl, "ttl", kvlock.DefaultTTL, "lease TTL: how long a crashed holder keeps the lock (renewed every TTL/3)")
	f.DurationVar(&hf.wait, "wait", 0, "give up if not acquired within this long (0: wait until acquired or interrupted)")
	f.StringVar(&hf.holder, "holder", "", "holder id stored with the lock (default <host>:<pid>:<random>)")
	f.BoolVar(&hf.create, "create", false, "create the --bucket when it does not exist (the default bucket is always created)")
	f.BoolVar(&hf.passSecrets, "pass-secrets", false, passSecretsUsage)
}

// existingOnly says whether a holding command must find its bucket: a
// bucket named with --bucket must exist unless --create is given, so that
// a misspelt name is refused, not made a new bucket.
func (hf *holdFlags) existingOnly(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("bucket") && !hf.create
}

// createHint adds to a missing bucket's error how to create it.
func createHint(err error) error {
	var nb noBucketError
	if errors.As(err, &nb) {
		return fmt.Errorf("%w (add --create to create it)", err)
	}
	return err
}

var (
	errInterrupted = errors.New("interrupted while waiting")
	errWaitTimeout = errors.New("not acquired within --wait")
)

// openLocker connects (reconnecting for as long as the lock lives: its
// validity window, not the connection, decides when it is lost) and opens
// a Locker on bucket. With existing, a missing bucket is a noBucketError;
// without, the bucket is created when missing.
func (a *app) openLocker(ctx context.Context, bucket string, hf *holdFlags, existing bool) (*nats.Conn, *kvlock.Locker, error) {
	cctx, cancel := a.conn.opContext(ctx)
	defer cancel()
	nc, js, err := a.conn.connect(cctx, nats.MaxReconnects(-1))
	if err != nil {
		return nil, nil, err
	}
	if existing {
		if _, err := bindExisting(cctx, js, bucket); err != nil {
			nc.Close()
			return nil, nil, err
		}
	}
	l, err := kvlock.New(cctx, js, kvlock.Config{Name: hf.name, Bucket: bucket, TTL: hf.ttl, Holder: hf.holder, OpTimeout: a.conn.timeout})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, l, nil
}

// closeLocker releases what l still holds, bounded by --timeout even when
// the command's context has ended.
func (a *app) closeLocker(ctx context.Context, nc *nats.Conn, l *kvlock.Locker) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.conn.timeout)
	defer cancel()
	_ = l.Close(cctx)
	nc.Close()
}

// waitContext returns the context to wait for a lock or a leadership
// with. It ends on ctx's end (an interrupt) or after hf.wait, with
// errInterrupted or errWaitTimeout as its cause, until settle is called;
// settle reports the cause when one of them already fired. Unlike ctx,
// the returned context outlives an interrupt once settled, so a signal
// that is forwarded to the command does not release the lock under it.
func waitContext(ctx context.Context, wait time.Duration) (wctx context.Context, settle func() error, cancel func()) {
	wctx, cancelCause := context.WithCancelCause(context.WithoutCancel(ctx))
	stopInterrupt := context.AfterFunc(ctx, func() { cancelCause(errInterrupted) })
	var timer *time.Timer
	if wait > 0 {
		timer = time.AfterFunc(wait, func() { cancelCause(fmt.Errorf("%w %v", errWaitTimeout, wait)) })
	}
	settle = func() error {
		ok := stopInterrupt()
		if timer != nil && !timer.Stop() {
			ok = false
		}
		if !ok {
			return context.Cause(wctx)
		}
		return nil
	}
	return wctx, settle, func() { cancelCause(context.Canceled) }
}

// addLockRun makes `lock KEY [-- CMD...]` hold a lock (the lock group's
// own subcommands, such as ls, keep their names).
func (a *app) addLockRun(cmd *cobra.Command, bucket *string) {
	var hf holdFlags
	cmd.Use = "lock [KEY [-- CMD ARGS...]]"
	cmd.Long = "lock KEY waits for the kvlock lock KEY, holds it (renewed by a watchdog) and, with a\n" +
		"command after --, runs the command while holding it. The command finds the lock's\n" +
		"fencing token in NATSCOORD_LOCK_TOKEN (pass it with every write to the resource the\n" +
		"lock protects), the key in NATSCOORD_LOCK_KEY and the bucket key in\n" +
		"NATSCOORD_LOCK_LEASE_KEY; natscoord's secrets (the NATS_* and NATSCOORD_* variables:\n" +
		"server URL, password, credentials, dashboard token) are removed from its environment\n" +
		"unless --pass-secrets. Signals are forwarded to the command; natscoord exits with\n" +
		"its exit code (128+N when killed by signal N) and releases the lock after it ends.\n" +
		"If the lock is lost meanwhile, the command is sent SIGTERM at once and natscoord\n" +
		"exits non-zero. Without a command, lock prints the token and holds the lock until\n" +
		"interrupted (exit 0) or lost (exit 1)."
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help() // `lock` alone, like a command group
		}
		words, argv, err := commandAfterDash(cmd, args, 1)
		if err != nil {
			return err
		}
		key := words[0]
		if err := kvlock.ValidateKey(key); err != nil {
			return fmt.Errorf("lock %q: %w", key, err)
		}
		ctx := cmd.Context()
		nc, l, err := a.openLocker(ctx, *bucket, &hf, hf.existingOnly(cmd))
		if err != nil {
			return createHint(err)
		}
		defer a.closeLocker(ctx, nc, l)

		wctx, settle, cancel := waitContext(ctx, hf.wait)
		defer cancel()
		held, release, err := l.Hold(wctx, key)
		if cause := settle(); cause != nil {
			if err == nil {
				release()
			}
			return fmt.Errorf("lock %q: %w", key, cause)
		}
		if err != nil {
			return err
		}
		defer release()
		token, _ := kvlock.TokenFromContext(held)
		leaseKey, err := l.LeaseKey(key)
		if err != nil {
			return err
		}
		return a.holdOrRun(ctx, held, fmt.Sprintf("lock %q", key), argv, hf.passSecrets,
			[]string{"NATSCOORD_LOCK_KEY=" + key, "NATSCOORD_LOCK_TOKEN=" + strconv.FormatUint(token, 10),
				"NATSCOORD_LOCK_LEASE_KEY=" + leaseKey},
			map[string]any{"key": key, "token": token, "lease_key": leaseKey},
			fmt.Sprintf("holding lock %s (token %d, lease key %s); Ctrl-C releases it", key, token, leaseKey))
	}
	hf.register(cmd.Flags())
}

// holdOrRun is the end of `lock KEY` and `elect NAME VALUE` once held:
// with argv, run that command under held with natscoord's environment
// (its secrets removed unless passSecrets: commandEnv, as work does) and
// env added; else print doc (--json) or line, and wait until ctx ends or
// held is lost.
func (a *app) holdOrRun(ctx, held context.Context, what string, argv []string, passSecrets bool, env []string, doc map[string]any, line string) error {
	if argv != nil {
		return runUnder(held, what, argv, append(commandEnv(os.Environ(), passSecrets), env...), a.stdin, a.stdout, a.stderr)
	}
	var err error
	if a.json {
		err = writeJSON(a.stdout, doc)
	} else {
		_, err = fmt.Fprintln(a.stdout, line)
	}
	if err != nil {
		return err
	}
	return holdUntil(ctx, held, what)
}

// holdUntil waits until ctx ends (an interrupt: a normal end) or held is
// cancelled (the lock or leadership was lost: an error).
func holdUntil(ctx, held context.Context, what string) error {
	select {
	case <-ctx.Done():
		return nil
	case <-held.Done():
		return fmt.Errorf("%s lost: %v", what, context.Cause(held))
	}
}
