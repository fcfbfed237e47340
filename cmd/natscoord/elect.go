package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvlock"
)

func init() { extraCommands = append(extraCommands, (*app).electCommand) }

// leaderLine is one change printed by `elect --observe`.
type leaderLine struct {
	Time   time.Time `json:"time"`
	Vacant bool      `json:"vacant"`
	Value  string    `json:"value,omitempty"`
	Term   uint64    `json:"term,omitempty"`
	Holder string    `json:"holder,omitempty"`
}

func (a *app) electCommand() *cobra.Command {
	var (
		hf      holdFlags
		bucket  string
		observe bool
		count   int
	)
	cmd := &cobra.Command{
		Use:   "elect NAME VALUE [-- CMD ARGS...] | elect --observe NAME",
		Short: "Campaign in a kvlock election and run a command while leader, or observe its leaders",
		Long: "elect NAME VALUE campaigns in the election NAME (any string) and, once leader,\n" +
			"publishes VALUE (an address, say). With a command after --, it runs the command\n" +
			"while leading: the command finds the term (the leadership's fencing token) in\n" +
			"NATSCOORD_ELECTION_TERM, the name in NATSCOORD_ELECTION and the value in\n" +
			"NATSCOORD_ELECTION_VALUE; natscoord's secrets (the NATS_* and NATSCOORD_* variables:\n" +
			"server URL, password, credentials, dashboard token) are removed from its environment\n" +
			"unless --pass-secrets. Signals are forwarded to the command; natscoord exits with\n" +
			"its exit code and resigns after it ends. If leadership is lost meanwhile, the\n" +
			"command is sent SIGTERM at once and natscoord exits non-zero. Without a command,\n" +
			"elect holds the leadership until interrupted (then resigns, exit 0) or lost (exit 1).\n\n" +
			"elect --observe NAME prints the election's leader, then every change: a new leader,\n" +
			"a new value, and every vacancy (resignation, expiry, force release), until\n" +
			"interrupted or --count changes were printed. It never creates the bucket.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if observe {
				if len(args) != 1 || cmd.ArgsLenAtDash() >= 0 {
					return errors.New("elect --observe takes one election name and no command")
				}
				if count < 0 {
					return fmt.Errorf("--count must not be negative, got %d", count)
				}
				return a.observeElection(cmd.Context(), bucket, &hf, args[0], count)
			}
			if cmd.Flags().Changed("count") {
				return errors.New("--count goes with --observe")
			}
			words, argv, err := commandAfterDash(cmd, args, 2)
			if err != nil {
				return err
			}
			return a.campaign(cmd.Context(), bucket, &hf, hf.existingOnly(cmd), words[0], words[1], argv)
		},
	}
	f := cmd.Flags()
	hf.register(f)
	f.StringVar(&bucket, "bucket", kvlease.DefaultBucket, "lock bucket (kvlock keeps elections in a kvlease bucket)")
	f.BoolVar(&observe, "observe", false, "print the leaders of NAME as they change, vacancies included")
	f.IntVar(&count, "count", 0, "with --observe: stop after this many changes (0: until interrupted)")
	return cmd
}

func (a *app) campaign(ctx context.Context, bucket string, hf *holdFlags, existing bool, name, value string, argv []string) error {
	if name == "" {
		return errors.New("elect: empty election name")
	}
	nc, l, err := a.openLocker(ctx, bucket, hf, existing)
	if err != nil {
		return createHint(err)
	}
	defer a.closeLocker(ctx, nc, l) // resigns when still leading
	e, err := kvlock.NewElection(l, name)
	if err != nil {
		return err
	}
	// Campaign's ctx bounds only the campaign: leadership then lasts until
	// Resign, Close or loss, so a forwarded signal does not end it.
	wctx, settle, cancel := waitContext(ctx, hf.wait)
	err = e.Campaign(wctx, value)
	cancel()
	if cause := settle(); cause != nil {
		return fmt.Errorf("elect %q: %w", name, cause)
	}
	if err != nil {
		return fmt.Errorf("elect %q: %w", name, err)
	}
	held := e.Context()
	if held == nil {
		return fmt.Errorf("elect %q: leadership ended at once: %w", name, kvlock.ErrLost)
	}
	term := e.Term()
	return a.holdOrRun(ctx, held, fmt.Sprintf("leadership of %q", name), argv, hf.passSecrets,
		[]string{"NATSCOORD_ELECTION=" + name, "NATSCOORD_ELECTION_TERM=" + strconv.FormatUint(term, 10),
			"NATSCOORD_ELECTION_VALUE=" + value},
		map[string]any{"election": name, "value": value, "term": term},
		fmt.Sprintf("leading %s with %s (term %d); Ctrl-C resigns", escapeCell(name), escapeCell(value), term))
}

func (a *app) observeElection(ctx context.Context, bucket string, hf *holdFlags, name string, count int) error {
	if name == "" {
		return errors.New("elect: empty election name")
	}
	// An observer never creates the bucket; its connection reconnects, as
	// a long-running watch's does.
	nc, l, err := a.openLocker(ctx, bucket, hf, true)
	if err != nil {
		return err
	}
	defer a.closeLocker(ctx, nc, l)
	e, err := kvlock.NewElection(l, name)
	if err != nil {
		return err
	}
	printed := 0
	for ev := range e.Observe(ctx) {
		line := leaderLine{Time: wall.Now().UTC(), Vacant: ev.Vacant, Value: ev.Info.Value, Term: ev.Info.Term, Holder: ev.Info.Holder}
		if a.json {
			err = writeJSONLine(a.stdout, line)
		} else if line.Vacant {
			_, err = fmt.Fprintf(a.stdout, "%s  vacant\n", line.Time.Format(eventTimeFormat))
		} else {
			_, err = fmt.Fprintf(a.stdout, "%s  leader  term %d  holder %s  value %s\n", line.Time.Format(eventTimeFormat),
				line.Term, escapeCell(line.Holder), escapeCell(line.Value))
		}
		if err != nil {
			return err
		}
		if printed++; count > 0 && printed >= count {
			return nil
		}
	}
	if ctx.Err() != nil {
		return nil // interrupted: the normal end of an observer
	}
	return fmt.Errorf("elect --observe %q: the watch ended after %d changes (connection lost?)", name, printed)
}

// eventTimeFormat is the time column of streamed lines (UTC, milliseconds).
const eventTimeFormat = "2006-01-02T15:04:05.000Z07:00"
