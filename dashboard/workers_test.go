package dashboard_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/dashboard"
	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// The workers page follows the claimant leases as they come and go: a
// lease in the claims bucket that is not a claimant's (another family's)
// is never listed, a claim's lease is listed while it lives, and the row
// is gone once the claim ends and its lease with it.
func TestWorkersPageFollowsClaimantLeases(t *testing.T) {
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) {
		c.LeaseBuckets = []string{kvlease.DefaultBucket, worker.DefaultLeaseBucket}
		c.Create = true
	})
	ctx := natstest.Context(t, 20*time.Second)
	claimer := e.LeasedClaimer(t, "worker-7")
	s := e.OpenSSE(t)

	other, err := kvlease.NewManager(ctx, e.Node.NewJS(t), kvlease.Config{Bucket: worker.DefaultLeaseBucket, Holder: "not-a-worker"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(ctx) })
	g, ok, err := other.TryAcquireKey(ctx, "jobs.nightly", 30*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	t.Cleanup(func() { _ = g.Release(ctx) })
	s.WaitAll(t, []string{"event: coord", `"what":"acquired"`, `"ref":"` + url.QueryEscape("jobs.nightly")})

	dashtest.Admit(t, e.Ledger, "crunch", nil)
	fence, err := claimer.Claim(ctx, "worker", "crunch", "worker-7", 30*time.Second, time.Now())
	require.NoError(t, err)
	rec, _, err := e.Ledger.State(ctx, "crunch")
	require.NoError(t, err)
	s.WaitAll(t, []string{"event: coord", `"what":"acquired"`, `"ref":"` + url.QueryEscape(rec.Lease)})
	body := e.Page(t, "/workers")
	require.Regexp(t, `<tr data-lease="`+regexp.QuoteMeta(url.QueryEscape(rec.Lease))+`"><td class="holder">worker-7</td>`, body)
	require.NotContains(t, body, "not-a-worker")
	require.Len(t, regexp.MustCompile(`<tr data-lease=`).FindAllString(body, -1), 1)

	require.NoError(t, claimer.Complete(ctx, "worker", "crunch", "worker-7", fence, kvledger.StatusCompleted, time.Now()))
	s.WaitAll(t, []string{"event: coord", `"what":"released"`, `"ref":"` + url.QueryEscape(rec.Lease)})
	body = e.Page(t, "/workers")
	require.NotContains(t, body, `<tr data-lease=`)
	require.NotContains(t, body, "not-a-worker")
}

// An idle worker is listed with the kinds it handles; a kind with pending
// tasks that no live worker handles is flagged on the workers page and
// on the overview, until a worker that handles it starts.
func TestWorkersPageListsIdleWorkersAndUnservedKinds(t *testing.T) {
	e := dashtest.NewEnv(t, nil, func(c *dashboard.Config) {
		c.LeaseBuckets = []string{kvlease.DefaultBucket, worker.DefaultLeaseBucket}
		c.Create = true
	})
	e.StartWorker(t, "mailer", "mail", "digest")
	// Pending for good: it needs a task nobody admits, so no worker
	// claims it and it stays in the pending count.
	dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "text-1", Kind: "sms", Needs: []kvledger.IdempotencyKey{"never"}})
	dashtest.Submit(t, e.Ledger, kvledger.Submission{Key: "mail-1", Kind: "mail", Needs: []kvledger.IdempotencyKey{"never"}})

	idleRow := regexp.MustCompile(`<tr data-lease="[^"]+" class="idle"><td class="holder">mailer</td><td class="owner">mailer</td>\s*<td class="kinds"><span class="kind">digest</span> <span class="kind">mail</span> </td>`)
	var body string
	natstest.Eventually(t, 10*time.Second, func() bool {
		body = e.Page(t, "/workers")
		return idleRow.MatchString(body)
	}, "the idle worker listed with its kinds")
	require.Contains(t, body, `<span class="muted">idle</span>`)
	for _, page := range []string{body, e.Page(t, "/")} {
		require.Contains(t, page, `id="unserved"`)
		require.Contains(t, page, `href="/tasks?status=pending&amp;kind=sms">sms</a> <span class="muted">1 pending</span>`)
		require.NotContains(t, page, `kind=mail"`, "mail has a live worker")
	}

	e.StartWorker(t, "texter", "sms")
	natstest.Eventually(t, 10*time.Second, func() bool {
		return !strings.Contains(e.Page(t, "/"), `id="unserved"`) && !strings.Contains(e.Page(t, "/workers"), `id="unserved"`)
	}, "no kind is flagged once a worker handles sms")
}
