// Command mcp-bridge runs the mcp-bridge service as its own process.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"clopen.dev/pkg/platform/sandbox"
	"clopen.dev/services/mcp-bridge"
)

func main() {
	sandbox.Main() // the stdio servers' sandbox init, when started as it
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bridge.Serve(ctx, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-bridge:", err)
		os.Exit(1)
	}
}
