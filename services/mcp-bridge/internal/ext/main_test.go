package ext_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: Close
// must end every upstream session and stdio server the Handler started.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
