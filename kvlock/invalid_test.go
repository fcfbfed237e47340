package kvlock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

func TestInvalidConfigs(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 10*time.Second)
	_, err := kvlock.New(ctx, nil, kvlock.Config{})
	require.ErrorIs(t, err, kvlock.ErrInvalidConfig)
	for name, cfg := range map[string]kvlock.Config{
		"ttl below 1s":         {TTL: 500 * time.Millisecond},
		"ttl above 24h":        {TTL: 25 * time.Hour},
		"negative ttl":         {TTL: -time.Second},
		"renew above ttl/3":    {TTL: 3 * time.Second, RenewInterval: 1001 * time.Millisecond},
		"negative renew":       {RenewInterval: -time.Second},
		"negative op timeout":  {OpTimeout: -1},
		"name with a dot":      {Name: "a.b"},
		"name with a wildcard": {Name: "*"},
		"long name":            {Name: strings.Repeat("n", 65)},
		"retry attempts":       {Retry: kvlock.RetryPolicy{Attempts: -1}},
		"retry backoff":        {Retry: kvlock.RetryPolicy{Backoff: 2 * time.Second, MaxBackoff: time.Second}},
		"replicas":             {Replicas: 7},
	} {
		_, err := kvlock.New(ctx, n.JS, cfg)
		require.ErrorIs(t, err, kvlock.ErrInvalidConfig, name)
		require.True(t, strings.HasPrefix(err.Error(), "kvlock: "), name)
	}
	// Negative timings are named as such, not reported as out of range.
	_, err = kvlock.New(ctx, n.JS, kvlock.Config{TTL: -time.Second})
	require.ErrorContains(t, err, "negative TTL")
	_, err = kvlock.New(ctx, n.JS, kvlock.Config{RenewInterval: -time.Millisecond})
	require.ErrorContains(t, err, "negative RenewInterval")
	_, err = kvlock.New(ctx, n.JS, kvlock.Config{TTL: 10 * time.Millisecond})
	require.ErrorContains(t, err, "floor")
	// The boundary is allowed, and the defaults are documented values.
	l := newLocker(t, n.JS, kvlock.Config{TTL: 3 * time.Second, RenewInterval: time.Second})
	require.Equal(t, time.Second, l.Config().RenewInterval)
	d := newLocker(t, n.JS, kvlock.Config{})
	c := d.Config()
	require.Equal(t, kvlock.DefaultName, c.Name)
	require.Equal(t, kvlock.DefaultTTL, c.TTL)
	require.Equal(t, kvlock.DefaultTTL/3, c.RenewInterval)
	require.Equal(t, kvlock.DefaultOpTimeout, c.OpTimeout)
	require.Equal(t, kvlock.DefaultRetryAttempts, c.Retry.Attempts)
	require.False(t, c.Fair)
}

func TestInvalidKeys(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 10*time.Second)
	l := newLocker(t, n.JS, kvlock.Config{TTL: 2 * time.Second})
	for _, k := range []string{"", "a b", "a..b", ".a", "a.", "a.*", ">", "ü", "a:b", strings.Repeat("k", kvlock.MaxKeyBytes+1), kvlock.Key("a", "")} {
		require.ErrorIs(t, kvlock.ValidateKey(k), kvlock.ErrInvalidKey, "%q", k)
		_, err := l.Acquire(ctx, k)
		require.ErrorIs(t, err, kvlock.ErrInvalidKey, "%q", k)
		_, _, err = l.TryAcquire(ctx, k)
		require.ErrorIs(t, err, kvlock.ErrInvalidKey, "%q", k)
		_, _, err = l.Hold(ctx, k)
		require.ErrorIs(t, err, kvlock.ErrInvalidKey, "%q", k)
		_, err = l.LeaseKey(k)
		require.ErrorIs(t, err, kvlock.ErrInvalidKey, "%q", k)
	}
	for _, k := range []string{"a", "a.b", "conv.42", "A-Z_0/9=x", kvlock.Key("ws", "conv", "x y:z", "ü.")} {
		require.NoError(t, kvlock.ValidateKey(k), k)
	}
	require.Equal(t, "conv.42", kvlock.Key("conv", "42"))
	require.Equal(t, "tenant=20a.x=2Ey", kvlock.Key("tenant a", "x.y"))
	require.NotEqual(t, kvlock.Key("a.b"), kvlock.Key("a", "b"), "escaping keeps part lists apart")
	_, err := kvlock.NewElection(l, "")
	require.ErrorIs(t, err, kvlock.ErrInvalidKey)
	_, err = kvlock.NewElection(nil, "x")
	require.ErrorIs(t, err, kvlock.ErrInvalidConfig)
}

func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"a", "a.b", "", ".", "a..b", "a b", "*", ">", "x=2E", "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// Key always yields a valid key from non-empty parts...
		if s != "" && len(kvlock.Key(s)) <= kvlock.MaxKeyBytes {
			require.NoError(t, kvlock.ValidateKey(kvlock.Key(s)))
		}
		// ...and ValidateKey never panics and either accepts or says why.
		if err := kvlock.ValidateKey(s); err != nil {
			require.ErrorIs(t, err, kvlock.ErrInvalidKey)
		}
	})
}
