package embedded_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/natscoord/natscoord/embedded"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartStop(t *testing.T) {
	ctx := context.Background()
	s, err := embedded.Start(ctx, embedded.Options{})
	require.NoError(t, err)
	js, err := s.JetStream()
	require.NoError(t, err)
	_, err = js.CreateKeyValue(ctx, jetstreamKV("b"))
	require.NoError(t, err)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(sctx))
}
