// Package sandboxtest holds what tests of sandboxed processes share.
package sandboxtest

import (
	"os"
	"testing"
)

// NeedRoot skips the test when it does not run as root, which the sandbox
// needs, or fails it under CI=true, where nothing may be skipped.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the sandbox needs root")
		}
		t.Skip("the sandbox needs root")
	}
}
