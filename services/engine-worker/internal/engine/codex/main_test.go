package codex_test

import (
	"testing"

	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

func TestMain(m *testing.M) { enginetest.Main(m) }
