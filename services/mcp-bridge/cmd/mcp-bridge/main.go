// Command mcp-bridge runs the mcp-bridge service as its own process.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"clopen.dev/services/mcp-bridge"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bridge.Serve(ctx, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-bridge:", err)
		os.Exit(1)
	}
}
