package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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
	rc := a.tailReconnect(durable != "")
	cctx, ccancel := a.conn.opContext(ctx)
	nc, js, err := a.conn.connect(cctx, rc.opts...)
	ccancel()
	if err != nil {
		return err
	}
	defer rc.close(nc)

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

// eventColumns are the columns of `events tail`. A stream has no last
// row to measure, so the widths are fixed: a longer value is truncated
// (fitCell) so that every row keeps its columns in place, and --json
// prints it whole. Numbers are right-aligned and never cut.
var eventColumns = []struct {
	name  string
	width int
}{
	{"TIME", len(eventTimeFormat) - len("Z07:00") + len("Z")}, // printed in UTC
	{"EVENT", 18}, {"SOURCE", 20}, {"KEY", 24}, {"STATUS", 9}, {"OWNER", 16},
	{"FENCE", 6}, {"REV", 10}, {"BLOCKED-BY", maxCellWidth},
}

func printEvent(a *app, e events.Event, header bool) error {
	cells := []string{e.Time.UTC().Format(eventTimeFormat), string(e.Name), e.Source, e.Key, dash(e.Status), dash(e.Owner),
		strconv.FormatUint(e.Fence, 10), strconv.FormatUint(e.Revision, 10), dash(e.BlockedBy)}
	var b strings.Builder
	if header {
		for i, c := range eventColumns {
			writeEventCell(&b, i, c.name)
		}
	}
	for i, c := range cells {
		writeEventCell(&b, i, c)
	}
	_, err := io.WriteString(a.stdout, b.String())
	return err
}

// writeEventCell writes the cell of column i of eventColumns: fitted to
// its width, numbers right-aligned, the last one unpadded and ending the
// line.
func writeEventCell(b *strings.Builder, i int, cell string) {
	width := eventColumns[i].width
	switch name := eventColumns[i].name; {
	case i == len(eventColumns)-1:
		b.WriteString(truncateCell(escapeCell(cell), width))
		b.WriteByte('\n')
		return
	case name == "FENCE" || name == "REV":
		b.WriteString(strings.Repeat(" ", max(0, width-len(cell))) + cell)
	default:
		b.WriteString(fitCell(cell, width))
	}
	b.WriteString("  ")
}

// eventFilter keeps the events of one source (ledger bucket) and one key;
// an empty field matches everything.
type eventFilter struct{ source, key string }

func (f eventFilter) match(e events.Event) bool {
	return (f.source == "" || e.Source == f.source) && (f.key == "" || e.Key == f.key)
}
