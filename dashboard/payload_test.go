package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// preText returns the unescaped text of the <pre> with id in body.
func preText(t *testing.T, body, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<pre class="[^"]*" id="` + id + `">(.*?)</pre>`).FindStringSubmatch(body)
	require.NotNil(t, m, "no <pre id=%q> in %s", id, body)
	return html.UnescapeString(m[1])
}

// A task's page shows its arguments and its result as indented JSON,
// escaped; the other pages never show them.
func TestTaskPageShowsArgumentsAndResult(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "invoice", Kind: "bill",
			Task: map[string]any{"customer": "<acme>", "lines": []int{1, 2}}})
		e.RunAttempt(t, "invoice", "w1", 0, func(_ context.Context, task *worker.Task) error {
			return task.SetRawResult([]byte(`{"sent":true,"id":"inv-7"}`))
		})
	}, nil)
	body := e.Page(t, "/task?key=invoice")
	require.Equal(t, "{\n  \"customer\": \"<acme>\",\n  \"lines\": [\n    1,\n    2\n  ]\n}", preText(t, body, "args"))
	require.Contains(t, body, "&lt;acme&gt;", "escaped")
	require.Equal(t, "{\n  \"sent\": true,\n  \"id\": \"inv-7\"\n}", preText(t, body, "result"))
	require.NotContains(t, body, "truncated")
	require.Equal(t, preText(t, body, "args"), preText(t, e.Page(t, "/fragment/task?key=invoice"), "args"), "the live fragment too")
	for _, path := range []string{"/", "/tasks", "/events"} {
		require.NotContains(t, e.Page(t, path), "acme", path)
	}
}

// Arguments larger than the bound are cut at it, and the page says so
// with the stored size.
func TestTaskPageBoundsArguments(t *testing.T) {
	big := strings.Repeat("x", 40_000)
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "big", Kind: "bulk", Task: map[string]any{"blob": big}})
	}, nil)
	body := e.Page(t, "/task?key=big")
	args := preText(t, body, "args")
	require.Len(t, args, 16<<10, "the first 16 KiB")
	require.True(t, strings.HasPrefix(args, "{\n  \"blob\": \"xxx"))
	stored := len(`{"blob":"` + big + `"}`)
	require.Contains(t, body, fmt.Sprintf(`truncated, %d bytes (the first 16384 shown)`, stored))
}

// With HidePayloads the task page shows neither arguments nor result,
// and says why.
func TestHidePayloadsKeepsThemOffTheTaskPage(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "login", Kind: "auth", Task: map[string]any{"password": "hunter2"}})
		e.RunAttempt(t, "login", "w1", 0, func(_ context.Context, task *worker.Task) error {
			return task.SetRawResult([]byte(`{"token":"s3cr3t"}`))
		})
	}, func(c *dashboard.Config) { c.HidePayloads = true })
	for _, path := range []string{"/task?key=login", "/fragment/task?key=login"} {
		body := e.Page(t, path)
		require.NotContains(t, body, "hunter2", path)
		require.NotContains(t, body, "s3cr3t", path)
		require.NotContains(t, body, `id="args"`, path)
		require.NotContains(t, body, `id="result"`, path)
		require.Contains(t, body, `id="payloads-hidden"`, path)
	}
}

// The task list has a last-error column: the error's first line, cut
// at 200 bytes, with that line as its title; the live push of a record
// change carries it. The task page shows the whole error, its lines kept,
// in its facts and in the attempts table.
func TestTaskListErrorColumn(t *testing.T) {
	first := "connect: " + strings.Repeat("refused ", 40)
	whole := first + "\n\tat the second line of a trace"
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "calm", Kind: "calm"})
	}, nil)
	s := e.OpenSSE(t)
	dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "flaky", Kind: "flaky", MaxAttempts: 3})
	e.RunAttempt(t, "flaky", "w1", time.Hour, func(context.Context, *worker.Task) error { return errors.New(whole) })
	line := first[:200] + "…"
	s.WaitFor(t, "event: ledger", `"ref":"flaky"`, `"error":"`+line+`"`)

	body := e.Page(t, "/tasks")
	require.Contains(t, body, `<th>last error</th>`)
	require.Contains(t, body, `<div class="errline" data-field="error" title="`+line+`">`+line+`</div>`)
	require.Contains(t, body, `<div class="errline" data-field="error"></div>`, "a task without an error has an empty cell")

	task := e.Page(t, "/task?key=flaky")
	require.Contains(t, task, `<dd class="err" id="last-error">`+strings.TrimSpace(whole)+`</dd>`)
	require.Regexp(t, `<td class="err">`+regexp.QuoteMeta(strings.TrimSpace(whole))+`</td></tr>`, task, "each attempt's whole error, its lines kept")
}
