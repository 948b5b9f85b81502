package live

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// connection, writer, pinger and relay must have been waited for.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
