package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// oldEventStream is the stream the layout before kept the ledger's events
// in, shared by every bucket: its writers published each event on
// "ledger.<event>" (two tokens: ledger.admitted, ledger.claimed...), and
// the stream captured "ledger.>" by default.
const oldEventStream = "LEDGER"

// oldEventSubjects is what the old stream is narrowed to: every event of
// the layout before (ledger.<event>), none of a migrated bucket's live
// feed (ledger.<bucket>.<key>: three tokens at least), which "ledger.>"
// captured, recording every write of every migrated bucket for ever.
const oldEventSubjects = "ledger.*"

const migrateHelp = `migrate updates the ledger bucket's stream in place: it keeps the last 64
writes of each key (the ledger's events) and republishes every write on
ledger.<bucket>.<key>. The writes already stored stay as they are. It needs
the right to update the stream ($JS.API.STREAM.UPDATE.KV_<bucket>); a
process without it that opens an old bucket is refused with a message
naming this command.

The LEDGER stream, where the layout before kept the events of every bucket
(on ledger.<event>), captured ledger.>, so it would also record the live
feed of every migrated bucket. migrate narrows its subjects from ledger.>
to ledger.*: it keeps the old events, and those that writers of the layout
before still publish for buckets not yet migrated, and records no live
feed. A LEDGER stream with subjects outside ledger.* is not the layout
before's: migrate leaves it as it is (and says so when it captures the
bucket's live feed).

--delete-old-stream deletes the LEDGER stream, and with it the old events
of every bucket. It refuses while a ledger bucket is not migrated (its
writers may still record in it) and names those buckets; without --yes it
only shows what it would delete.`

// ledgerMigrate brings a ledger bucket of the layout before to the one
// whose stream is the event log (kvledger/doc.go, "Events"): opening it
// with the right to update its stream is the migration (NewKVStore).
func (a *app) ledgerMigrate(lf *ledgerFlags) *cobra.Command {
	var dropOld, yes bool
	cmd := &cobra.Command{
		Use:   "migrate [--delete-old-stream [--yes]]",
		Short: "Give a ledger bucket of an older layout its event log (History 64, live feed)",
		Long:  migrateHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if yes && !dropOld {
				return errors.New("--yes goes with --delete-old-stream")
			}
			return a.withJS(cmd.Context(), func(ctx context.Context, js jetstream.JetStream) error {
				if _, err := openStore(ctx, js, lf.bucket, false); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s: keeps %d writes per key, live on %s\n", lf.bucket, kvledger.EventHistory, kvledger.LiveSubject(lf.bucket))
				s, err := js.Stream(ctx, oldEventStream)
				switch {
				case errors.Is(err, jetstream.ErrStreamNotFound):
					if dropOld {
						fmt.Fprintf(a.stdout, "no %s stream\n", oldEventStream)
					}
					return nil
				case err != nil:
					return fmt.Errorf("stream %s: %w", oldEventStream, err)
				}
				cfg := s.CachedInfo().Config
				if err := a.narrowOldStream(ctx, js, cfg, lf.bucket); err != nil {
					return err
				}
				if !dropOld {
					return nil
				}
				return a.deleteOldStream(ctx, js, lf.bucket, s, yes)
			})
		},
	}
	cmd.Flags().BoolVar(&dropOld, "delete-old-stream", false, "also delete the "+oldEventStream+" stream of the layout before (refused while a ledger bucket is not migrated)")
	cmd.Flags().BoolVar(&yes, "yes", false, "with --delete-old-stream: delete it (without, show what would be deleted)")
	return cmd
}

// oldSubjectsOnly reports whether every subject of a stream is one the
// layout before's LEDGER stream captured: ledger.<event>, ledger.* or
// ledger.> (two tokens under "ledger").
func oldSubjectsOnly(subjects []string) bool {
	for _, s := range subjects {
		tok := strings.Split(s, ".")
		if len(tok) != 2 || tok[0] != "ledger" || tok[1] == "" {
			return false
		}
	}
	return len(subjects) > 0
}

// narrowOldStream makes the old stream stop capturing bucket's live feed:
// "ledger.>" becomes "ledger.*". A stream that does not capture it is left
// as it is; one that does with subjects other than the layout before's is
// someone else's: left as it is, with an error.
func (a *app) narrowOldStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, bucket string) error {
	live := kvledger.LiveSubject(bucket)
	if !slices.ContainsFunc(cfg.Subjects, func(s string) bool { return server.SubjectsCollide(s, live) }) {
		return nil
	}
	was := strings.Join(cfg.Subjects, ", ")
	if !oldSubjectsOnly(cfg.Subjects) {
		return fmt.Errorf("stream %s captures %s, so it records every write of bucket %s (%s), and it is not the layout before's "+
			"(ledger.<event> subjects only): left as it is; narrow its subjects yourself", oldEventStream, was, bucket, live)
	}
	// ledger.* holds every other subject the stream may have beside
	// ledger.> (ledger.<event>: oldSubjectsOnly).
	cfg.Subjects = []string{oldEventSubjects}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("narrow stream %s from %s to %s (it records every write of the migrated buckets until then): %w",
			oldEventStream, was, oldEventSubjects, err)
	}
	fmt.Fprintf(a.stdout, "stream %s: subjects %s -> %s (keeps the layout before's events, ledger.<event>; no longer records the live feed, ledger.<bucket>.>)\n",
		oldEventStream, was, oldEventSubjects)
	return nil
}

// deleteOldStream deletes the old stream with yes, or shows what it would
// delete. It refuses a stream that is not the layout before's, and one
// that ledger buckets not migrated may still write to (named).
func (a *app) deleteOldStream(ctx context.Context, js jetstream.JetStream, migrated string, s jetstream.Stream, yes bool) error {
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", oldEventStream, err)
	}
	if !oldSubjectsOnly(info.Config.Subjects) {
		return fmt.Errorf("stream %s not deleted: it captures %s, not only the layout before's ledger.<event> subjects",
			oldEventStream, strings.Join(info.Config.Subjects, ", "))
	}
	old, err := unmigratedLedgers(ctx, js, migrated)
	if err != nil {
		return err
	}
	if len(old) > 0 {
		return fmt.Errorf("stream %s not deleted: ledger bucket(s) %s are not migrated, and their writers of the layout before may still record events in it; "+
			"run `natscoord ledger migrate --bucket B` for each first", oldEventStream, strings.Join(old, ", "))
	}
	what := fmt.Sprintf("stream %s (subjects %s; %d messages, %d bytes", oldEventStream,
		strings.Join(info.Config.Subjects, ", "), info.State.Msgs, info.State.Bytes)
	if info.State.Msgs > 0 {
		what += fmt.Sprintf(", %s to %s", info.State.FirstTime.UTC().Format(time.RFC3339), info.State.LastTime.UTC().Format(time.RFC3339))
	}
	what += "): the layout before's events of every bucket"
	if !yes {
		fmt.Fprintf(a.stdout, "would delete %s\n", what)
		return fmt.Errorf("stream %s not deleted: add --yes to delete it", oldEventStream)
	}
	if err := js.DeleteStream(ctx, oldEventStream); err != nil {
		return fmt.Errorf("delete stream %s: %w", oldEventStream, err)
	}
	fmt.Fprintf(a.stdout, "deleted %s\n", what)
	return nil
}

// unmigratedLedgers names the ledger buckets, other than except, whose
// stream has not the events layout (no RePublish on their live
// subjects): a KV bucket whose description names kvledger (its default),
// or that holds a task record (task.<key>, kvledger's key layout: a
// description may have been set otherwise).
func unmigratedLedgers(ctx context.Context, js jetstream.JetStream, except string) ([]string, error) {
	var old []string
	streams := js.ListStreams(ctx)
	for si := range streams.Info() {
		bucket, ok := strings.CutPrefix(si.Config.Name, "KV_")
		if !ok || bucket == except {
			continue
		}
		if rp := si.Config.RePublish; rp != nil && rp.Destination == kvledger.LiveSubject(bucket) {
			continue
		}
		ledger := strings.Contains(si.Config.Description, "natscoord kvledger")
		if !ledger {
			s, err := js.Stream(ctx, si.Config.Name)
			if err != nil {
				return nil, fmt.Errorf("stream %s: %w", si.Config.Name, err)
			}
			_, err = s.GetLastMsgForSubject(ctx, "$KV."+bucket+".task.>")
			switch {
			case err == nil:
				ledger = true
			case !errors.Is(err, jetstream.ErrMsgNotFound):
				return nil, fmt.Errorf("stream %s: %w", si.Config.Name, err)
			}
		}
		if ledger {
			old = append(old, bucket)
		}
	}
	if err := streams.Err(); err != nil {
		return nil, fmt.Errorf("list streams: %w", err)
	}
	slices.Sort(old)
	return old, nil
}
