package dashboard_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/dashtest"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

// TestStartsAroundCorruptRecord: a value in the ledger bucket that is not
// a record (here one stored under a key that is not valid UTF-8, as the
// KVStore once wrote them) does not keep the dashboard from starting;
// every other task is shown.
func TestStartsAroundCorruptRecord(t *testing.T) {
	e := dashtest.NewEnv(t, func(e *dashtest.Env) {
		dashtest.Admit(t, e.Ledger, "job-ok", nil)
		ctx := natstest.Context(t, 10*time.Second)
		kv, err := e.Node.JS.KeyValue(ctx, dashtest.LedgerBucket)
		require.NoError(t, err)
		_, err = kv.Put(ctx, "task.b=FF", []byte(`{"key":"b\ufffd","status":"pending","sequence":1,"fence":0,"ins":true}`))
		require.NoError(t, err)
	}, nil)
	require.Contains(t, e.Page(t, "/"), `data-count="total">1<`)
}
