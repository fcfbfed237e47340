package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/events"
)

func init() { extraCommands = append(extraCommands, (*app).eventsCommand) }

func (a *app) eventsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Watch ledger events",
	}
	var (
		durable, subject, stream string
		count                    int
		filter                   eventFilter
	)
	tail := &cobra.Command{
		Use:   "tail [--durable NAME] [--count N] [--source BUCKET] [--key K]",
		Short: "Print ledger events as they happen (live), or from a durable consumer",
		Long: "tail prints every event published on --subject from now on (a core subscription:\n" +
			"nothing is stored or acknowledged). With --durable it reads through the named\n" +
			"durable consumer of the event stream instead: from the stream's first event the\n" +
			"first time, and from where that consumer stopped afterwards (an event is\n" +
			"acknowledged once printed). It stops on SIGINT/SIGTERM or after --count events.\n" +
			"--source and --key keep only the events of one ledger (its bucket name) and one\n" +
			"task key; every ledger publishes on the same subjects, so these filter the event\n" +
			"bodies (a durable consumer acknowledges the events it skips).\n" +

			"When the server goes away, tail says so on stderr and reconnects until it is back\n" +
			"(--durable then resumes where it stopped; a live tail misses what was published\n" +
			"meanwhile and says so).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count < 0 {
				return fmt.Errorf("--count must not be negative, got %d", count)
			}
			err := a.tailEvents(cmd.Context(), durable, stream, subject, count, filter)
			if err != nil && cmd.Context().Err() != nil {
				return nil // interrupted (SIGINT/SIGTERM): a normal end of a tail
			}
			return err
		},
	}
	f := tail.Flags()
	f.StringVar(&durable, "durable", "", "read through this durable consumer (resumes where it stopped)")
	f.StringVar(&subject, "subject", events.DefaultSubject, "event subject filter")
	f.StringVar(&stream, "stream", events.DefaultStream, "event stream (with --durable)")
	f.IntVar(&count, "count", 0, "stop after this many events (0: until interrupted)")
	f.StringVar(&filter.source, "source", "", "only events of this ledger (its bucket name)")
	f.StringVar(&filter.key, "key", "", "only events of this task key")
	cmd.AddCommand(tail)
	return cmd
}

// tailEvents prints events until ctx ends (SIGINT) or count were printed.
// Ending by the signal is a normal exit.
func (a *app) tailEvents(parent context.Context, durable, stream, subject string, count int, filter eventFilter) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	cctx, ccancel := a.conn.opContext(ctx)
	nc, js, err := a.conn.connect(cctx, a.tailReconnect(durable != "")...)
	ccancel()
	if err != nil {
		return err
	}
	defer nc.Close()

	var (
		mu      sync.Mutex
		printed int
		outErr  error
	)
	// print writes one event; it reports false once enough were printed.
	print := func(e events.Event) bool {
		mu.Lock()
		defer mu.Unlock()
		if outErr != nil || (count > 0 && printed >= count) {
			return false
		}
		if !filter.match(e) {
			return true // handled: not wanted
		}
		if a.json {
			outErr = writeJSONLine(a.stdout, e)
		} else {
			outErr = printEvent(a, e, printed == 0)
		}
		printed++
		if outErr != nil || (count > 0 && printed >= count) {
			cancel()
		}
		return outErr == nil
	}

	if durable != "" {
		sctx, scancel := a.conn.opContext(ctx)
		d, err := events.SubscribeDurable(sctx, js, events.DurableConfig{Stream: stream, Durable: durable, Subjects: []string{subject}},
			func(_ context.Context, e events.Event) error {
				if !print(e) {
					return errors.New("not printed") // stays unacknowledged: redelivered to the next tail
				}
				return nil
			}, nil)
		scancel()
		if err != nil {
			return err
		}
		<-ctx.Done()
		_ = d.Close()
	} else {
		live, err := events.SubscribeLive(nc, subject, func(e events.Event) { print(e) }, nil)
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-nc.StatusChanged(nats.CLOSED):
		}
		_ = live.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if outErr != nil {
		return outErr
	}
	if count > 0 && printed < count && parent.Err() == nil {
		return fmt.Errorf("connection closed after %d of %d events", printed, count)
	}
	return nil
}

func printEvent(a *app, e events.Event, header bool) error {
	if header {
		if _, err := fmt.Fprintf(a.stdout, "%-24s  %-18s  %-20s  %-10s  %-9s  %-12s  %6s  %8s  %s\n",
			"TIME", "EVENT", "SOURCE", "KEY", "STATUS", "OWNER", "FENCE", "REV", "BLOCKED-BY"); err != nil {
			return err
		}
	}
	// The columns are fixed (a stream has no last row to measure), padded
	// by display width so that wide keys stay aligned where they fit.
	_, err := fmt.Fprintf(a.stdout, "%-24s  %s  %s  %s  %s  %s  %6d  %8d  %s\n",
		e.Time.UTC().Format(eventTimeFormat), padCell(string(e.Name), 18), padCell(e.Source, 20), padCell(e.Key, 10),
		padCell(dash(e.Status), 9), padCell(dash(e.Owner), 12), e.Fence, e.Revision, escapeCell(dash(e.BlockedBy)))
	return err
}

// eventFilter keeps the events of one source (ledger bucket) and one key;
// an empty field matches everything.
type eventFilter struct{ source, key string }

func (f eventFilter) match(e events.Event) bool {
	return (f.source == "" || e.Source == f.source) && (f.key == "" || e.Key == f.key)
}
