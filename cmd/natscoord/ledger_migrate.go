package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/natscoord/natscoord/kvledger"
)

// oldEventStream is the stream the layout before kept the ledger's events
// in (published by the writers on "ledger.>"), no longer written.
const oldEventStream = "LEDGER"

// ledgerMigrate brings a ledger bucket of the layout before to the one
// whose stream is the event log (kvledger/doc.go, "Events"): opening it
// with the right to update its stream is the migration (NewKVStore).
func (a *app) ledgerMigrate(lf *ledgerFlags) *cobra.Command {
	var dropOld bool
	cmd := &cobra.Command{
		Use:   "migrate [--delete-old-stream]",
		Short: "Give a ledger bucket of an older layout its event log (History 64, live feed)",
		Long: `migrate updates the ledger bucket's stream in place: it keeps the last 64
writes of each key (the ledger's events) and republishes every write on
ledger.<bucket>.<key>. The writes already stored stay as they are. It needs
the right to update the stream ($JS.API.STREAM.UPDATE.KV_<bucket>); a
process without it that opens an old bucket is refused with a message
naming this command. With --delete-old-stream it also deletes the LEDGER
stream, where the layout before kept its events (no longer written).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withJS(cmd.Context(), func(ctx context.Context, js jetstream.JetStream) error {
				if _, err := openStore(ctx, js, lf.bucket, false); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s: keeps %d writes per key, live on %s\n", lf.bucket, kvledger.EventHistory, kvledger.LiveSubject(lf.bucket))
				if !dropOld {
					return nil
				}
				err := js.DeleteStream(ctx, oldEventStream)
				switch {
				case errors.Is(err, jetstream.ErrStreamNotFound):
					fmt.Fprintf(a.stdout, "no %s stream\n", oldEventStream)
				case err != nil:
					return fmt.Errorf("delete stream %s: %w", oldEventStream, err)
				default:
					fmt.Fprintf(a.stdout, "deleted stream %s\n", oldEventStream)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&dropOld, "delete-old-stream", false, "also delete the "+oldEventStream+" stream of the layout before")
	return cmd
}
