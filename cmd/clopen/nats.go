package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"clopen.dev/pkg/platform/embeddednats"
)

// runNATS runs the embedded NATS server (JetStream on disk) as its own
// process until ctx ends: for running services as separate processes on one
// machine (`clopen bench` does) without installing nats-server.
func runNATS(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "JetStream store directory (required)")
	port := fs.Int("port", 4222, "client port on 127.0.0.1 (-1 picks one)")
	sync := fs.Bool("sync-always", false, "fsync before acknowledging a publish")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("clopen nats: --dir is required")
	}
	ns, err := embeddednats.Start(embeddednats.Config{StoreDir: *dir, Port: *port, SyncAlways: *sync})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, ns.ClientURL())
	<-ctx.Done()
	ns.Shutdown()
	ns.WaitForShutdown()
	return nil
}
