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
	)
	tail := &cobra.Command{
		Use:   "tail [--durable NAME] [--count N]",
		Short: "Print ledger events as they happen (live), or from a durable consumer",
		Long: "tail prints every event published on --subject from now on (a core subscription:\n" +
			"nothing is stored or acknowledged). With --durable it reads through the named\n" +
			"durable consumer of the event stream instead: from the stream's first event the\n" +
			"first time, and from where that consumer stopped afterwards (an event is\n" +
			"acknowledged once printed). It stops on SIGINT/SIGTERM or after --count events.\n" +
			"When the server goes away, tail says so on stderr and reconnects until it is back\n" +
			"(--durable then resumes where it stopped; a live tail misses what was published\n" +
			"meanwhile and says so).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count < 0 {
				return fmt.Errorf("--count must not be negative, got %d", count)
			}
			err := a.tailEvents(cmd.Context(), durable, stream, subject, count)
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
	cmd.AddCommand(tail)
	return cmd
}

// tailEvents prints events until ctx ends (SIGINT) or count were printed.
// Ending by the signal is a normal exit.
func (a *app) tailEvents(parent context.Context, durable, stream, subject string, count int) error {
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
		d.Stop()
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
	_, err := fmt.Fprintf(a.stdout, "%-24s  %-18s  %-20s  %-10s  %-9s  %-12s  %6d  %8d  %s\n",
		e.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"), e.Name, e.Source, e.Key, dash(e.Status), dash(e.Owner), e.Fence, e.Revision, dash(e.BlockedBy))
	return err
}
