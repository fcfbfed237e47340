package embedded_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
)

// An empty, non-nil allow list means "nothing", as User documents:
// nats-server itself reads an empty Allow as "no restriction".
func TestUserEmptyAllowListAllowsNothing(t *testing.T) {
	s := start(t, embedded.Options{Auth: embedded.Auth{Users: []embedded.User{
		{Name: "none", Password: "p", Publish: []string{}, Subscribe: []string{}},
	}}})
	errs := make(chan error, 4)
	nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("none", "p"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	require.NoError(t, err)
	defer nc.Close()

	_, err = nc.SubscribeSync("x")
	require.NoError(t, err) // refused asynchronously
	require.NoError(t, nc.Publish("x", nil))
	require.NoError(t, nc.Flush())
	for range 2 {
		select {
		case err := <-errs:
			require.ErrorIs(t, err, nats.ErrPermissionViolation)
		case <-time.After(5 * time.Second):
			t.Fatal("no permission violation reported")
		}
	}
}
