// Command engine-worker runs one engine worker as its own process.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	worker "clopen.dev/services/engine-worker"
)

func main() {
	worker.SandboxInit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := worker.Serve(ctx, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "engine-worker:", err)
		os.Exit(1)
	}
}
