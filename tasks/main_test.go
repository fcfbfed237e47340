package tasks_test

import (
	"testing"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }
