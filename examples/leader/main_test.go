package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/examples/internal/exampletest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

func TestRun(t *testing.T) {
	s := exampletest.Embedded(t, run)
	for _, want := range []string{
		"observer: no leader",
		`observer: leader node-1 value "http://node-1:8080"`,
		"node-1: writing with fencing token = term",
		"node-1: stopped leading (true)",
		"leading after node-1 crashed (within TTL+1s: true, new term > old: true)",
		"resigned",
		"Leader(): node-",
	} {
		require.Contains(t, s, want)
	}
	// Initial vacancy, crash, two resignations: a term shorter than the
	// observer's watch lag passes unseen on a loaded machine (its vacancy
	// then merges with the one before), but the first two always show.
	vacancies := strings.Count(s, "observer: no leader")
	require.GreaterOrEqual(t, vacancies, 2, "initial vacancy and the crash")
	require.LessOrEqual(t, vacancies, 4, "initial vacancy, crash, two resignations")
}
