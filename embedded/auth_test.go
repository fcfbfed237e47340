package embedded_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestAuthUserPassword(t *testing.T) {
	s := start(t, embedded.Options{Auth: embedded.Auth{User: "app", Password: "s3cret"}})

	_, err := nats.Connect(s.ClientURL())
	require.ErrorIs(t, err, nats.ErrAuthorization, "no credentials")
	_, err = nats.Connect(s.ClientURL(), nats.UserInfo("app", "wrong"))
	require.ErrorIs(t, err, nats.ErrAuthorization, "wrong password")

	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("app", "s3cret"))
	require.NoError(t, err)
	nc.Close()

	// Server.Connect adds the configured credentials itself.
	natstest.Connect(t, s)
	_, err = s.JetStream()
	require.NoError(t, err)
}

func TestAuthToken(t *testing.T) {
	s := start(t, embedded.Options{Auth: embedded.Auth{Token: "tok"}})

	_, err := nats.Connect(s.ClientURL())
	require.ErrorIs(t, err, nats.ErrAuthorization)
	_, err = nats.Connect(s.ClientURL(), nats.Token("other"))
	require.ErrorIs(t, err, nats.ErrAuthorization)

	nc, err := nats.Connect(s.ClientURL(), nats.Token("tok"))
	require.NoError(t, err)
	nc.Close()
	natstest.Connect(t, s)
}

func TestAuthUsersWithPermissions(t *testing.T) {
	s := start(t, embedded.Options{Auth: embedded.Auth{Users: []embedded.User{
		{Name: "admin", Password: "a"}, // nil lists: everything
		{Name: "limited", Password: "l", Publish: []string{"allowed.>"}, Subscribe: []string{"allowed.>"}},
	}}})

	_, err := nats.Connect(s.ClientURL())
	require.ErrorIs(t, err, nats.ErrAuthorization)

	admin := natstest.Connect(t, s, nats.UserInfo("admin", "a"))
	seen, err := admin.SubscribeSync(">")
	require.NoError(t, err)
	require.NoError(t, admin.Flush())

	errs := make(chan error, 4)
	limited := natstest.Connect(t, s, nats.UserInfo("limited", "l"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))

	require.NoError(t, limited.Publish("allowed.x", []byte("ok")))
	require.NoError(t, limited.Flush())
	// The server's own advisories reach ">" too, some late (the refused
	// connect above): the first message that is not one is limited's.
	m, err := seen.NextMsg(5 * time.Second)
	for err == nil && strings.HasPrefix(m.Subject, "$SYS.") {
		m, err = seen.NextMsg(5 * time.Second)
	}
	require.NoError(t, err)
	require.Equal(t, "allowed.x", m.Subject)

	// Publishing elsewhere is refused (asynchronously, as NATS reports it).
	require.NoError(t, limited.Publish("forbidden.x", []byte("no")))
	require.NoError(t, limited.Flush())
	require.ErrorIs(t, natstest.Recv(t, errs, 5*time.Second, "publish violation"), nats.ErrPermissionViolation)

	// So is subscribing elsewhere.
	_, err = limited.SubscribeSync("forbidden.>")
	require.NoError(t, err)
	require.NoError(t, limited.Flush())
	require.ErrorIs(t, natstest.Recv(t, errs, 5*time.Second, "subscribe violation"), nats.ErrPermissionViolation)

	// The refused message never reached anyone.
	require.NoError(t, admin.Flush())
	_, err = seen.NextMsg(50 * time.Millisecond)
	require.ErrorIs(t, err, nats.ErrTimeout)
}

func TestAuthNKey(t *testing.T) {
	pub, sign := nkeyUser(t)
	s := start(t, embedded.Options{Auth: embedded.Auth{NKeys: []string{pub}}})

	_, err := nats.Connect(s.ClientURL())
	require.ErrorIs(t, err, nats.ErrAuthorization)

	other, otherSign := nkeyUser(t)
	_, err = nats.Connect(s.ClientURL(), nats.Nkey(other, otherSign))
	require.ErrorIs(t, err, nats.ErrAuthorization, "unknown key")
	_, err = nats.Connect(s.ClientURL(), nats.Nkey(pub, otherSign))
	require.ErrorIs(t, err, nats.ErrAuthorization, "wrong signature")

	nc, err := nats.Connect(s.ClientURL(), nats.Nkey(pub, sign))
	require.NoError(t, err)
	nc.Close()
}
