package ext_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"clopen.dev/pkg/platform/sandbox"
)

// TestMain fails the package if any goroutine outlives the tests: Close
// must end every upstream session and stdio server the Handler started.
// Started as the sandbox's init or as the hostile stdio server, the test
// binary is that instead.
func TestMain(m *testing.M) {
	sandbox.Main()
	if len(os.Args) > 1 && os.Args[1] == hostileArg {
		serveHostile()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
