// Command gateway runs the public HTTP and WebSocket gateway as its own process.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"clopen.dev/services/gateway"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := gateway.Serve(ctx, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}
