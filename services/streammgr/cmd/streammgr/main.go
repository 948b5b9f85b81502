// Command streammgr runs the stream manager as its own process.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"clopen.dev/services/streammgr"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := streammgr.Serve(ctx, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "streammgr:", err)
		os.Exit(1)
	}
}
