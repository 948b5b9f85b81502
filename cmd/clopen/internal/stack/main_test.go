package stack

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"

	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway"
	"clopen.dev/services/streammgr"
)

// TestMain doubles as a standalone service when the tests re-exec their own
// binary (CLOPEN_TEST_ROLE=worker|streammgr|gateway): a real process that a
// test can kill. Like every binary that runs a worker, it is also the
// agent sandbox's init (worker.SandboxInit).
func TestMain(m *testing.M) {
	worker.SandboxInit()
	roles := map[string]func(context.Context, func(string) string, io.Writer) error{
		"worker": worker.Serve, "streammgr": streammgr.Serve, "gateway": gateway.Serve,
	}
	if serve, ok := roles[os.Getenv("CLOPEN_TEST_ROLE")]; ok {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := serve(ctx, os.Getenv, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, os.Getenv("CLOPEN_TEST_ROLE")+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
