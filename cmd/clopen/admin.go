package main

import (
	"context"
	"io"

	"clopen.dev/cmd/clopen/internal/admincmd"
)

// runAdmin is `clopen admin`: operator commands on DATABASE_URL (see
// admincmd), and rotate-key, which re-seals every engine credential.
func runAdmin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "rotate-key" {
		return runRotateKey(ctx, args[1:], getenv, stdout, stderr)
	}
	return admincmd.Run(ctx, args, getenv, stdout, stderr)
}
