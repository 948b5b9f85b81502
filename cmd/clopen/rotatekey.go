package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/services/artifacts"
)

// runRotateKey is `clopen admin rotate-key`: it re-seals every engine
// account credential with a new master key. The current key is
// CLOPEN_MASTER_KEY or <data dir>/secret.key; the new one is
// CLOPEN_NEW_MASTER_KEY or generated. A file key is replaced in place (the
// old one kept as secret.key.old); a generated key for an environment setup
// is printed once, to be put in CLOPEN_MASTER_KEY. Artifacts services must
// be restarted afterwards.
func runRotateKey(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clopen admin rotate-key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: clopen admin rotate-key\n\nre-seals every engine account credential with a new master key;\n"+
			"reads DATABASE_URL, CLOPEN_DATA, CLOPEN_MASTER_KEY and (optional) CLOPEN_NEW_MASTER_KEY\n")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	url := getenv("DATABASE_URL")
	if url == "" {
		return fmt.Errorf("clopen admin rotate-key needs DATABASE_URL")
	}
	dir, err := dataDir(getenv)
	if err != nil {
		return err
	}
	pool, err := pgdb.Open(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	cfg := artifacts.ConfigFromEnv(getenv)
	cfg.DataDir = dir
	res, err := artifacts.RotateKey(ctx, pool, cfg, getenv("CLOPEN_NEW_MASTER_KEY"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "re-sealed %d credential(s): key %s -> %s\n", res.Resealed, res.OldFingerprint, res.NewFingerprint)
	if res.KeyFile != "" {
		fmt.Fprintf(stdout, "new key in %s (the old one in %s.old)\n", res.KeyFile, res.KeyFile)
	}
	if res.NewKey != "" {
		fmt.Fprintf(stdout, "set CLOPEN_MASTER_KEY=%s\n", res.NewKey)
	}
	fmt.Fprintln(stdout, "restart the artifacts service(s) to use the new key")
	return nil
}
