package chaos

import (
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// reportEnv names a file the tests append their counts to (one line per
// test), so that a run's numbers can be copied into RELIABILITY.md.
const reportEnv = "NATSCOORD_CHAOS_REPORT"

var reportMu sync.Mutex

// report logs a result line and appends it to $NATSCOORD_CHAOS_REPORT.
func report(t *testing.T, _ string, line string) {
	t.Helper()
	t.Log(line)
	path := os.Getenv(reportEnv)
	if path == "" {
		return
	}
	reportMu.Lock()
	defer reportMu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	defer f.Close()
	_, err = fmt.Fprintf(f, "%s %s: %s\n", time.Now().UTC().Format(time.RFC3339), t.Name(), line)
	require.NoError(t, err)
}

// soakDuration returns how long a soak test runs: $NATSCOORD_SOAK (set by
// `make soak`). Soak tests skip when it is unset.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("NATSCOORD_SOAK")
	if v == "" {
		t.Skip("soak test: set NATSCOORD_SOAK=<duration> (make soak)")
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "NATSCOORD_SOAK")
	require.Positive(t, d)
	return d
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
