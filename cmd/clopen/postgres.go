package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/privatepg"
)

// runPostgres runs a private PostgreSQL cluster in the foreground until ctx
// ends: what the test script uses on a machine without a Postgres server.
func runPostgres(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("postgres", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "cluster directory (required)")
	port := fs.Int("port", 0, "TCP port on 127.0.0.1 (0 picks one)")
	urlFile := fs.String("url-file", "", "write the connection URL to this file once ready")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("clopen postgres: --dir is required")
	}
	c, err := privatepg.Start(ctx, privatepg.Config{Dir: *dir, Port: *port, Logger: logging.New(stderr, getenv("CLOPEN_LOG_LEVEL"))})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, c.URL())
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(c.URL()), 0o600); err != nil {
			_ = c.Stop(context.Background())
			return err
		}
	}
	select {
	case <-ctx.Done():
	case <-c.Done():
		return fmt.Errorf("postgres exited")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Stop(sctx)
}
