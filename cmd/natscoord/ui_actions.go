package main

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/natscoord/natscoord/dashboard"
)

// uiTaskActions returns what the dashboard's reopen and cancel buttons
// call. The ledger has no reopen or cancel transition yet, so there is
// nothing to call and the dashboard hides those buttons; wiring them is
// an adapter here from dashboard.TaskActions to the ledger's methods.
func uiTaskActions(jetstream.JetStream) dashboard.TaskActions { return nil }
