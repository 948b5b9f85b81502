package acp_test

import (
	"os"
	"testing"

	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeAgentEnv) != "" {
		fakeAgent()
		os.Exit(0)
	}
	enginetest.Main(m)
}
