package chaos

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvlock"
)

// The embedded server's loopback default is tested in package embedded
// (TestLoopbackOnlyByDefault and the tests beside it in embedded_test.go); here: TLS and auth
// end to end, subject permissions, and secrets kept out of logs.

// TestTLSAndAuthEndToEnd runs kvlease, kvlock and kvledger over a real
// TLS listener with password auth, and shows that a client without the
// password, or without the CA, is refused.
func TestTLSAndAuthEndToEnd(t *testing.T) {
	pki := natstest.NewPKI(t)
	cert, key, ca := pki.CertFile, pki.KeyFile, pki.CAFile
	n := natstest.WithServer(t, func(o *embedded.Options) {
		o.TLS = &embedded.TLS{CertFile: cert, KeyFile: key, CAFile: ca}
		o.Auth = embedded.Auth{User: "app", Password: "s3cret-pw"}
	})
	url := n.Server.ClientURL()
	require.True(t, strings.HasPrefix(url, "tls://"), url)

	_, err := nats.Connect(url, nats.RootCAs(ca))
	require.Error(t, err, "no credentials")
	_, err = nats.Connect(url, nats.UserInfo("app", "wrong"), nats.RootCAs(ca))
	require.Error(t, err, "wrong password")
	_, err = nats.Connect(url, nats.UserInfo("app", "s3cret-pw"))
	require.Error(t, err, "a client that does not trust the CA")

	nc, err := nats.Connect(url, nats.UserInfo("app", "s3cret-pw"), nats.RootCAs(ca))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	require.True(t, nc.TLSRequired())
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	exerciseComponents(t, js, "tls")
}

// exerciseComponents runs a short kvlease, kvlock and kvledger workload on
// js (buckets named after prefix) and fails t on any error.
func exerciseComponents(t *testing.T, js jetstream.JetStream, prefix string) {
	t.Helper()
	ctx := natstest.Context(t, 30*time.Second)
	require.NoError(t, exerciseLease(ctx, js, prefix+"_leases"))
	require.NoError(t, exerciseLock(ctx, js, prefix+"_locks"))
	require.NoError(t, exerciseLedger(ctx, js, prefix+"_tasks"))
}

func exerciseLease(ctx context.Context, js jetstream.JetStream, bucket string) error {
	m, err := kvlease.NewManager(ctx, js, kvlease.Config{Bucket: bucket, OpTimeout: time.Second})
	if err != nil {
		return err
	}
	defer m.Close(context.Background())
	leases, err := lockFamily.Bind(m)
	if err != nil {
		return err
	}
	g, ok, err := leases.Acquire(ctx, "k", 2*time.Second, 0)
	if err != nil || !ok {
		return errors.Join(err, errIf(!ok, "not acquired"))
	}
	if err := g.Renew(ctx); err != nil {
		return err
	}
	if _, _, err := leases.Holder(ctx, "k"); err != nil {
		return err
	}
	// A waiter (uses the bucket watch) is woken by the release.
	got := make(chan error, 1)
	go func() {
		g2, ok, err := leases.Acquire(ctx, "k", 2*time.Second, 10*time.Second)
		if err == nil && ok {
			err = g2.Release(ctx)
		}
		got <- errors.Join(err, errIf(err == nil && !ok, "waiter not woken"))
	}()
	if err := g.Release(ctx); err != nil {
		return err
	}
	return <-got
}

func exerciseLock(ctx context.Context, js jetstream.JetStream, bucket string) error {
	l, err := kvlock.New(ctx, js, kvlock.Config{Bucket: bucket, TTL: 2 * time.Second, OpTimeout: time.Second})
	if err != nil {
		return err
	}
	defer l.Close(context.Background())
	hctx, release, err := l.Hold(ctx, "k")
	if err != nil {
		return err
	}
	_, ok := kvlock.TokenFromContext(hctx)
	release()
	return errIf(!ok, "no token")
}

func exerciseLedger(ctx context.Context, js jetstream.JetStream, bucket string) error {
	store, err := kvledger.NewKVStore(ctx, js, kvledger.KVStoreConfig{Bucket: bucket})
	if err != nil {
		return err
	}
	l, err := kvledger.New(store)
	if err != nil {
		return err
	}
	now := time.Now()
	key := kvledger.IdempotencyKey(fmt.Sprintf("t%d", now.UnixNano()))
	if _, err := l.Admit(ctx, "sec", key, 1, nil, now); err != nil {
		return err
	}
	f, err := l.Claim(ctx, "sec", key, "w", time.Minute, now)
	if err != nil {
		return err
	}
	if err := l.Complete(ctx, "sec", key, "w", f, kvledger.StatusCompleted, now); err != nil {
		return err
	}
	s, _, err := l.State(ctx, key)
	if err != nil {
		return err
	}
	return errIf(s.Status != kvledger.StatusCompleted, "not completed")
}

func errIf(cond bool, msg string) error {
	if cond {
		return errors.New(msg)
	}
	return nil
}

// TestSecretsNeverLogged: lease owner secrets (inside exported tokens) and
// auth passwords appear in no log line, error or String() of kvlease and
// kvlock, through acquisition, renewal, export, restore, a failed restore,
// loss and release, with debug logging on.
func TestSecretsNeverLogged(t *testing.T) {
	var logs natstest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n := natstest.WithServer(t, func(o *embedded.Options) {
		o.Auth = embedded.Auth{User: "app", Password: "pw-never-logged"}
		o.Logger = logger
	})
	ctx := natstest.Context(t, 30*time.Second)
	m, err := kvlease.NewManager(ctx, n.NewJS(t), kvlease.Config{Bucket: "secrets", Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	leases, err := lockFamily.Bind(m)
	require.NoError(t, err)

	var texts []string // everything that could leak: errors, String()s
	g, ok, err := leases.TryAcquire(ctx, "job", 2*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, g.StartRenewing(0))
	tok, err := leases.Export(g)
	require.NoError(t, err)
	raw, err := tok.MarshalText()
	require.NoError(t, err)
	secret := tokenSecret(t, raw)
	texts = append(texts, tok.String(), fmt.Sprintf("%v %+v %#v %s", tok, tok, tok, tok))
	g2, err := leases.Restore(ctx, tok)
	require.NoError(t, err)
	_, err = leases.Restore(ctx, tok) // used up: ErrLost
	require.ErrorIs(t, err, kvlease.ErrLost)
	texts = append(texts, err.Error())
	h, _, err := leases.Holder(ctx, "job")
	require.NoError(t, err)
	texts = append(texts, fmt.Sprintf("%v %+v", h, h))
	_, err = leases.ForceRelease(ctx, "job")
	require.NoError(t, err)
	if err := g2.Renew(ctx); err != nil {
		texts = append(texts, err.Error())
	}
	var bad kvlease.Token[string]
	err = bad.UnmarshalText(append([]byte(nil), raw[:len(raw)-3]...))
	require.Error(t, err)
	texts = append(texts, err.Error())

	l, err := kvlock.New(ctx, n.NewJS(t), kvlock.Config{Bucket: "secrets_lock", TTL: 2 * time.Second, Logger: logger,
		Observer: kvlock.SlogObserver{Logger: logger}})
	require.NoError(t, err)
	lk, err := l.Acquire(ctx, "k")
	require.NoError(t, err)
	texts = append(texts, fmt.Sprintf("%v %+v", lk, lk))
	require.NoError(t, lk.Release(ctx))
	require.NoError(t, l.Close(ctx))

	all := logs.String() + strings.Join(texts, "\n")
	require.NotEmpty(t, logs.String(), "debug logging produced lines")
	for _, s := range []string{secret, string(raw), "pw-never-logged"} {
		require.NotContains(t, all, s)
	}
	report(t, "security", fmt.Sprintf("secrets: %d log bytes and %d error/String texts searched; owner secret, token and password found 0 times",
		len(logs.String()), len(texts)))
}

// tokenSecret extracts the hex owner secret from a token's text form.
func tokenSecret(t *testing.T, raw []byte) string {
	t.Helper()
	body, ok := bytes.CutPrefix(raw, []byte("kvlease1:"))
	require.True(t, ok)
	js, err := base64.RawURLEncoding.DecodeString(string(body))
	require.NoError(t, err)
	var w struct {
		S string `json:"s"`
	}
	require.NoError(t, json.Unmarshal(js, &w))
	require.Len(t, w.S, 64)
	return w.S
}
