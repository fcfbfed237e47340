package main

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// metricsURL is the URL a `work --metrics-listen` start line names.
func metricsURL(t *testing.T, line string) string {
	t.Helper()
	url := regexp.MustCompile(`http://\S+/metrics`).FindString(line)
	require.NotEmpty(t, url, line)
	return url
}

// `natscoord work --metrics-listen` serves the worker's metrics while it
// runs: attempts by kind and result, pickup latency, the claim lease's
// acquisitions and renewals, and the worker's Stats; the server ends with
// the worker.
func TestWorkMetricsListen(t *testing.T) {
	c, _ := newCLI(t)
	c.ok("ledger", "admit", "m1", "--seq", "1", "--kind", "slowish")
	work := c.start("work", "--kind", "slowish", "--ttl", "1s", "--metrics-listen", "127.0.0.1:0", "--", "sh", "-c", "sleep 1")
	url := metricsURL(t, work.line(t, 20*time.Second, "metrics at"))
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), url)

	r := c.run("ledger", "wait", "m1")
	require.Equal(t, waitCompleted, r.code, r.stderr)
	var body string
	natstest.Eventually(t, 10*time.Second, func() bool {
		code, b := get(t, url)
		body = b
		// Stats counts the outcome after the Observer heard of it, and
		// the attempt leaves the running ones after that.
		return code == http.StatusOK && strings.Contains(b, `natscoord_worker_attempts_total{result="completed"} 1`+"\n") &&
			strings.Contains(b, "natscoord_worker_running 0\n")
	}, "the completed attempt in the metrics")
	claims := worker.DefaultLeaseBucket
	for _, line := range []string{
		`natscoord_operations_total{component="worker",name="slowish",op="attempt",outcome="completed"} 1`,
		`natscoord_operation_duration_seconds_count{component="worker",name="slowish",op="pickup",outcome="started"} 1`,
		`natscoord_operations_total{component="kvlease",name="` + claims + `",op="acquire",outcome="ok"} 2`, // its presence and its claim lease
		`natscoord_worker_attempts_started_total 1`,
		`natscoord_worker_attempts_total{result="completed"} 1`,
		`natscoord_worker_running 0`,
		`# TYPE natscoord_worker_ready gauge`,
		`# TYPE go_goroutines gauge`,
	} {
		require.Contains(t, body, line+"\n")
	}
	// The handler ran 1s on a 1s lease renewed every third of it.
	require.Regexp(t, `natscoord_operations_total\{component="kvlease",name="`+claims+`",op="renew",outcome="ok"\} [1-9]`, body)
	require.Regexp(t, `natscoord_operation_duration_seconds_sum\{component="worker",name="slowish",op="attempt",outcome="completed"\} [1-9]\d*(\.\d+)?\n`, body) // at least the handler's 1s

	code, _ := get(t, strings.TrimSuffix(url, "metrics")+"other")
	require.Equal(t, http.StatusNotFound, code)
	// A name rebound to loopback (DNS rebinding) is refused, as the
	// dashboard refuses it (one check, internal/hostcheck: loopback names
	// in any case and with a trailing dot pass).
	for host, want := range map[string]int{"evil.example:80": http.StatusMisdirectedRequest, "evil.example": http.StatusMisdirectedRequest,
		"localhost.evil.example": http.StatusMisdirectedRequest, "localhost": http.StatusOK, "[::1]:9464": http.StatusOK,
		"LOCALHOST:9464": http.StatusOK, "localhost.": http.StatusOK} {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, want, resp.StatusCode, host)
	}

	out := work.stop(t)
	require.Equal(t, 0, out.code, out.stderr)
	_, err := http.Get(url)
	require.Error(t, err, "the metrics server ended with the worker")
}

func TestWorkMetricsListenRefusesRemote(t *testing.T) {
	c, _ := newCLI(t)
	line := c.fail("work", "--kind", "k", "--metrics-listen", "0.0.0.0:0", "--", "true")
	require.Contains(t, line, "not a loopback address")
	require.Contains(t, line, "--metrics-allow-remote")
	require.Contains(t, c.fail("work", "--kind", "k", "--metrics-listen", ":9464", "--", "true"), "not a loopback address")
	require.Contains(t, c.fail("work", "--kind", "k", "--metrics-listen", "nonsense", "--", "true"), "--metrics-listen")
	require.Contains(t, c.fail("work", "--kind", "k", "--metrics-allow-remote", "--", "true"), "needs --metrics-listen")

	work := c.start("work", "--kind", "k", "--metrics-listen", "0.0.0.0:0", "--metrics-allow-remote", "--", "true")
	require.NotEmpty(t, metricsURL(t, work.line(t, 20*time.Second, "metrics at")))
	require.Equal(t, 0, work.stop(t).code)
}

// A client that connects and sends nothing is cut off after the read
// timeout, not held for ever.
func TestWorkMetricsTimesOutSilentClient(t *testing.T) {
	old := metricsReadTimeout
	metricsReadTimeout = 300 * time.Millisecond
	t.Cleanup(func() { metricsReadTimeout = old })
	c, _ := newCLI(t)
	work := c.start("work", "--kind", "k", "--metrics-listen", "127.0.0.1:0", "--", "true")
	url := metricsURL(t, work.line(t, 20*time.Second, "metrics at"))
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	begin := time.Now()
	_, err = io.ReadAll(conn) // ends when the server closes the connection
	require.NoError(t, err)
	require.Less(t, time.Since(begin), 5*time.Second)
	require.Equal(t, 0, work.stop(t).code)
}
