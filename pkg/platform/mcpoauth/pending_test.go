package mcpoauth_test

import (
	"testing"

	"clopen.dev/pkg/platform/mcpoauth"
	"clopen.dev/pkg/platform/mcpoauth/mcpoauthtest"
)

func TestMemPending(t *testing.T) {
	mcpoauthtest.RunPendingStore(t, func(*testing.T) mcpoauth.PendingStore { return &mcpoauth.MemPending{} })
}
