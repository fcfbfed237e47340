package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/events"
	"github.com/natscoord/natscoord/kvledger"
)

func init() { extraCommands = append(extraCommands, (*app).eventsCommand) }

func (a *app) eventsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Watch ledger events",
	}
	var (
		durable, bucket string
		count           int
		filter          events.Filter
		names, statuses []string
	)
	tail := &cobra.Command{
		Use:   "tail [--bucket B] [--durable NAME] [--key K]... [--event NAME]... [--status S]... [--count N]",
		Short: "Print ledger events as they happen (live), or from a durable consumer",
		Long: "A ledger's events are its bucket's writes: each stored record write is one event,\n" +
			"named by its transition (header Ledger-Event), kept in the bucket's stream (the last\n" +
			"64 writes of each key) and republished live on ledger.<bucket>.<key>.\n" +
			"tail prints the live events from now on (at most once: nothing is stored or\n" +
			"acknowledged). With --durable it reads the bucket's stream through the named durable\n" +
			"consumer instead: from the stream's start the first time, and from where that consumer\n" +
			"stopped afterwards (an event is acknowledged once printed). --key follows only those\n" +
			"keys (a subject filter); --event keeps only those transitions and --status only the\n" +
			"writes that leave the record in that status (both read from headers, without\n" +
			"decoding the others): --event ledger.completed --status failed prints the failed\n" +
			"completions, --status failed every failure (cancellations too). Writes a subscriber\n" +
			"will never see (they left the stream before it read them) are reported on stderr as\n" +
			"a gap. It stops on\n" +
			"SIGINT/SIGTERM or after --count events.\n" +
			"When the server goes away, tail says so on stderr and reconnects until it is back\n" +
			"(--durable then resumes where it stopped; a live tail misses what was written\n" +
			"meanwhile and says so).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count < 0 {
				return fmt.Errorf("--count must not be negative, got %d", count)
			}
			filter.Names, filter.Statuses = filter.Names[:0], filter.Statuses[:0]
			for _, n := range names {
				name, err := ledgerEventName(n)
				if err != nil {
					return err
				}
				filter.Names = append(filter.Names, name)
			}
			for _, st := range statuses {
				if !slices.Contains(kvledger.Statuses, kvledger.Status(st)) {
					return fmt.Errorf("--status %q is not a record status: one of %s", st, nameList(kvledger.Statuses))
				}
				filter.Statuses = append(filter.Statuses, st)
			}
			err := a.tailEvents(cmd.Context(), bucket, durable, count, filter)
			if err != nil && cmd.Context().Err() != nil {
				return nil // interrupted (SIGINT/SIGTERM): a normal end of a tail
			}
			return err
		},
	}
	f := tail.Flags()
	f.StringVar(&bucket, "bucket", defaultLedgerBucket, "ledger bucket whose events to print")
	f.StringVar(&durable, "durable", "", "read through this durable consumer of the bucket's stream (resumes where it stopped)")
	f.IntVar(&count, "count", 0, "stop after this many events (0: until interrupted)")
	f.StringArrayVar(&filter.Keys, "key", nil, "only events of this task key (repeatable)")
	f.StringArrayVar(&names, "event", nil, "only events of this transition, e.g. "+string(kvledger.CompletedEvent)+" (repeatable)")
	f.StringArrayVar(&statuses, "status", nil, "only writes that leave the record in this status, e.g. "+string(kvledger.StatusFailed)+" (repeatable)")
	cmd.AddCommand(tail)
	return cmd
}

// tailEvents prints events until ctx ends (SIGINT) or count were printed.
// Ending by the signal is a normal exit.
func (a *app) tailEvents(parent context.Context, bucket, durable string, count int, filter events.Filter) error {
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
	src := kvledger.EventSource(bucket)

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
	onGap := func(g events.Gap) { fmt.Fprintf(a.stderr, "natscoord: events tail: %s\n", g) }
	onErr := func(err error) {
		if errors.Is(err, errNotPrinted) {
			return // an event past --count, left for the next tail on purpose
		}
		fmt.Fprintf(a.stderr, "natscoord: events tail: %s\n", errLine(err, a.conn.redactAll))
	}

	if durable != "" {
		// The bucket must have the events layout (an older one is
		// migrated, or the error says what to run); nothing is created.
		if err := a.checkTailBucket(ctx, js, bucket); err != nil {
			return err
		}
		sctx, scancel := a.conn.opContext(ctx)
		d, err := events.SubscribeDurable(sctx, js, src, events.DurableConfig{Durable: durable, Filter: filter, OnGap: onGap},
			func(_ context.Context, e events.Event) error {
				if !print(e) {
					return errNotPrinted // stays unacknowledged: redelivered to the next tail
				}
				return nil
			}, onErr)
		scancel()
		if err != nil {
			return err
		}
		<-ctx.Done()
		_ = d.Close()
	} else {
		live, err := events.SubscribeLive(nc, src, events.LiveConfig{Filter: filter, OnGap: onGap}, func(e events.Event) { print(e) }, onErr)
		if err != nil {
			return err
		}
		// Subscribed first, so that nothing written while the bucket is
		// checked is missed. The live feed needs only the subscription
		// (README "Security and permissions"): a user allowed nothing
		// else cannot read the bucket, and is told so but still gets the
		// feed. A bucket that does not exist yet is no error (it is
		// created with the layout); one of the older layout is, since
		// it publishes no live feed.
		if err := a.checkTailBucket(ctx, js, bucket); err != nil && ctx.Err() == nil {
			var missing noBucketError
			switch {
			case errors.As(err, &missing):
			case errors.Is(err, kvledger.ErrOldLayout):
				_ = live.Close()
				return err
			default:
				fmt.Fprintf(a.stderr, "natscoord: events tail: could not check the bucket (%s); printing the live feed on %s anyway\n",
					errLine(err, a.conn.redactAll), kvledger.LiveSubject(bucket))
			}
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

// ledgerEventName is the --event n of `events tail`: one of the names
// the ledger writes (kvledger.EventNames). Another name, well formed or
// not, would match no write, and the tail would wait for ever; one the
// ledger wrote once (ledger.failed) says what it writes instead.
func ledgerEventName(n string) (events.Name, error) {
	if slices.Contains(kvledger.EventNames[:], events.Name(n)) {
		return events.Name(n), nil
	}
	renamed := kvledger.EventSource(defaultLedgerBucket).Renamed
	for _, old := range []events.Name{events.Name(n), events.Name("ledger." + n)} {
		if now, ok := renamed[old]; ok {
			return "", fmt.Errorf("--event %q is no longer written: those writes are %s now, with the outcome in their status (--event %s --status failed picks the failures)",
				n, now, now)
		}
	}
	hint := ""
	if full := "ledger." + n; slices.Contains(kvledger.EventNames[:], events.Name(full)) {
		hint = fmt.Sprintf(" (did you mean %q?)", full)
	}
	return "", fmt.Errorf("--event %q is not an event name the ledger writes%s: one of %s", n, hint, nameList(kvledger.EventNames[:]))
}

// checkTailBucket binds bucket as `events tail` reads it: an existing
// ledger bucket of the events layout (an older one is migrated when the
// user may, or the error names `ledger migrate`); nothing is created.
func (a *app) checkTailBucket(ctx context.Context, js jetstream.JetStream, bucket string) error {
	octx, ocancel := a.conn.opContext(ctx)
	defer ocancel()
	st, err := openStore(octx, js, bucket, false)
	if err != nil {
		return err
	}
	st.Close()
	return nil
}

// eventColumns are the columns of `events tail`. A stream has no last
// row to measure, so the widths are fixed: a longer value is truncated
// (fitCell) so that every row keeps its columns in place, and --json
// prints it whole. Numbers are right-aligned and never cut. OWNER holds
// a worker's default id ("<host>:<pid>:<nuid>", the nuid 22 characters)
// whole for a host name of up to 12 characters (a container's) and a
// pid of up to 4 digits, so that it can be found in `ledger workers`:
// cut after 15 characters it named only the host and pid.
var eventColumns = []struct {
	name  string
	width int
}{
	{"TIME", len(eventTimeFormat) - len("Z07:00") + len("Z")}, // printed in UTC
	{"EVENT", 18}, {"SOURCE", 20}, {"KEY", 24}, {"STATUS", 9}, {"OWNER", 40},
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

// errNotPrinted is a durable tail's answer for an event past --count: it
// stays unacknowledged, so the next tail of the same durable prints it,
// and it is no error to report.
var errNotPrinted = errors.New("not printed")
