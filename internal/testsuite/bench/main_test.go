package bench

import (
	"os"
	"testing"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	natstest.VerifyTestMain(m)
}
