package tasks_test

import (
	"testing"

	"github.com/natscoord/natscoord/internal/natstest"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }
