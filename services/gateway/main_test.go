package gateway_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: Run must
// stop everything it started, WebSockets included.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
