package main

import (
	"context"
	"io"

	"clopen.dev/cmd/clopen/internal/admincmd"
)

// runAdmin is `clopen admin`: operator commands on DATABASE_URL (see
// admincmd), rotate-key, which re-seals every engine credential, and the
// bus's configuration (nats-config, nats-passwords, bus-keys), which need
// no database.
func runAdmin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "rotate-key":
			return runRotateKey(ctx, args[1:], getenv, stdout, stderr)
		case "gc-snapshots":
			return runGCSnapshots(ctx, args[1:], getenv, stdout, stderr)
		case "nats-config":
			return runNATSConfig(args[1:], stdout, stderr)
		case "nats-passwords":
			return runNATSPasswords(args[1:], stdout, stderr)
		case "bus-keys":
			return runBusKeys(args[1:], stdout, stderr)
		}
	}
	return admincmd.Run(ctx, args, getenv, stdout, stderr)
}
