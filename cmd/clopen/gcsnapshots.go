package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/cmd/clopen/internal/admincmd"
	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/pkg/platform/servekit"
	"clopen.dev/pkg/platform/snapshot"
)

// runGCSnapshots is `clopen admin gc-snapshots`: one garbage collection of
// the snapshot store, keeping what any run, session or project of
// DATABASE_URL still names. Run it from a schedule (a cron job, a
// Kubernetes CronJob); it is safe beside running workers, since nothing
// younger than the grace period is touched.
func runGCSnapshots(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clopen admin gc-snapshots", flag.ContinueOnError)
	fs.SetOutput(stderr)
	grace := fs.Duration("grace", snapshot.DefaultGrace, "keep anything stored more recently than this")
	dry := fs.Bool("dry-run", false, "report what would be deleted, delete nothing")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: clopen admin gc-snapshots [--grace 24h] [--dry-run]\n\n"+
			"deletes the snapshots no run, session or project needs any more, and the packs only they used;\n"+
			"reads DATABASE_URL, CLOPEN_NATS_URL and the operator's bus identity (CLOPEN_NATS_USER, CLOPEN_NATS_PASSWORD)\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *grace < time.Minute {
		return fmt.Errorf("gc-snapshots: --grace %s is too short: a capture in progress could lose its packs (at least 1m)", *grace)
	}
	url := getenv("DATABASE_URL")
	if url == "" {
		return fmt.Errorf("clopen admin gc-snapshots needs DATABASE_URL")
	}
	db, err := pgdb.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	natsURL := getenv(servekit.EnvNATSURL)
	if natsURL == "" {
		natsURL = "nats://127.0.0.1:4222"
	}
	nc, err := nats.Connect(natsURL, append([]nats.Option{nats.Name("clopen-admin")}, busauth.FromEnv(busauth.Operator, getenv)...)...)
	if err != nil {
		return fmt.Errorf("connect nats %s: %w", natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := js.ObjectStore(ctx, events.BucketSnapshots); errors.Is(err, jetstream.ErrBucketNotFound) {
		fmt.Fprintln(stdout, "no snapshot store yet: nothing to collect")
		return nil
	}
	store, err := snapshot.ObjectStore(ctx, js, events.BucketSnapshots, 1) // exists: binds it
	if err != nil {
		return err
	}
	st, err := admincmd.CollectSnapshots(ctx, db, snapshot.GC{Store: store, Grace: *grace, DryRun: *dry})
	verb := "deleted"
	if *dry {
		verb = "would delete"
	}
	fmt.Fprintf(stdout, "%d tenant(s), %d manifest(s), %d pack(s): %s %d manifest(s) and %d pack(s), %d bytes\n",
		st.Tenants, st.Manifests, st.Packs, verb, st.DeletedManifests, st.DeletedPacks, st.Freed)
	return err
}
