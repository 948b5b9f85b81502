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
// account credential with a new master key, and running artifacts services
// follow without a restart. With the data dir's key file it does it all;
// with CLOPEN_MASTER_KEY or CLOPEN_MASTER_KEY_FILE, the new key
// (CLOPEN_NEW_MASTER_KEY, or the list's one other key) must be in every
// replica's list first, and with none there it only prints one to add.
func runRotateKey(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clopen admin rotate-key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: clopen admin rotate-key\n\nre-seals every engine account credential with a new master key;\n"+
			"reads DATABASE_URL, CLOPEN_DATA, CLOPEN_MASTER_KEY or CLOPEN_MASTER_KEY_FILE, and (optional) CLOPEN_NEW_MASTER_KEY;\n"+
			"running artifacts services switch to the new key without a restart\n")
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
	if res.NewFingerprint == "" {
		fmt.Fprintf(stdout, "nothing rotated: the key list holds only the current key %s.\n"+
			"add this new key to every artifacts replica's CLOPEN_MASTER_KEY_FILE (or CLOPEN_MASTER_KEY, then restart them), then run rotate-key again:\n%s\n",
			res.OldFingerprint, res.NewKey)
		return nil
	}
	fmt.Fprintf(stdout, "re-sealed %d credential(s): key %s -> %s; running artifacts services use the new key now\n",
		res.Resealed, res.OldFingerprint, res.NewFingerprint)
	if res.KeyFile != "" {
		fmt.Fprintf(stdout, "new key in %s (the old one in %s.old)\n", res.KeyFile, res.KeyFile)
	} else {
		fmt.Fprintf(stdout, "the old key %s can now be removed from every replica's key list\n", res.OldFingerprint)
	}
	return nil
}
