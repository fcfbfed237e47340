// Package dashtest is the dashboard's test environment, built on natstest
// (which starts the servers): a real embedded
// nats-server with a ledger that publishes its events, a lease manager and
// a dashboard served over httptest, plus helpers that fetch its pages,
// post its action forms, follow its event stream and put tasks into the
// ledger. The dashboard's own tests and its real-browser tests (a nested
// module, so that their browser driver stays out of the core module's
// go.mod) share it.
//
// Every wait is bounded and everything it starts ends by t.Cleanup. It is
// imported by _test.go files only.
package dashtest
