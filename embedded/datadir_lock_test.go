package embedded_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/embedded"
)

// A second server on a data dir that a running one uses is refused, and
// the dir is usable again after Shutdown.
func TestDataDirInUseRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	s1, err := embedded.Start(ctx, embedded.Options{DataDir: dir})
	require.NoError(t, err)

	s2, err := embedded.Start(ctx, embedded.Options{DataDir: dir})
	require.ErrorIs(t, err, embedded.ErrDataDirInUse)
	require.Nil(t, s2)
	require.Contains(t, err.Error(), dir)

	require.NoError(t, s1.Shutdown(ctx))
	s3, err := embedded.Start(ctx, embedded.Options{DataDir: dir})
	require.NoError(t, err, "free again after Shutdown")
	require.NoError(t, s3.Shutdown(ctx))
}
