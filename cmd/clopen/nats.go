package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/nats-io/nats-server/v2/server"

	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/embeddednats"
)

// runNATS runs the embedded NATS server (JetStream on disk) as its own
// process until ctx ends: for running services as separate processes on one
// machine (`clopen bench` does) without installing nats-server. With the
// bus passwords in its environment (CLOPEN_NATS_PASSWORD_<ROLE>, as the
// shipped nats-server configuration reads them) it enforces every
// service's grants; without them the bus is open to whoever reaches the
// port, which it says.
func runNATS(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
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
	pw, err := busauth.PasswordsFromEnv(getenv)
	if err != nil {
		return err
	}
	var users []*server.User
	if pw == nil {
		fmt.Fprintln(stderr, "clopen nats: no bus passwords set ("+busauth.PasswordVar(busauth.Gateway)+" and the rest): "+
			"the bus is open to whoever reaches its port; for development on loopback only")
	} else if users, err = busauth.Users(pw); err != nil {
		return err
	}
	ns, err := embeddednats.Start(embeddednats.Config{StoreDir: *dir, Port: *port, SyncAlways: *sync, Users: users})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, ns.ClientURL())
	<-ctx.Done()
	ns.Shutdown()
	ns.WaitForShutdown()
	return nil
}
