// Command artifacts runs the artifacts service as its own process.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"clopen.dev/services/artifacts"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := artifacts.Serve(ctx, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "artifacts:", err)
		os.Exit(1)
	}
}
