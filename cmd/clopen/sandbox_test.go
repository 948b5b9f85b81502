package main

import (
	"os"
	"testing"

	worker "clopen.dev/services/engine-worker"
)

// TestMain serves the agent sandbox's init when a test's worker starts a
// confined agent (or checks its sandbox) by re-executing this binary.
func TestMain(m *testing.M) {
	worker.SandboxInit()
	os.Exit(m.Run())
}
