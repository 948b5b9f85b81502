package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"clopen.dev/cmd/clopen/internal/bench"
	"clopen.dev/cmd/clopen/internal/stack"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/pgdb"
)

// runBench runs the benchmark suite against Clopen started as separate
// processes on this machine, with the raw JetStream and Postgres baseline
// measured in the same run, and writes a table and a JSON report.
func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("json", "bench.json", "write the report as JSON to this file")
	quick := fs.Bool("quick", false, "a small run (a minute), to try the command")
	runs := fs.Int("runs", 0, "one streaming case with this many concurrent runs (replaces the default suite)")
	deltas := fs.Int("deltas", 500, "deltas per run for --runs")
	rate := fs.Float64("rate", 10_000, "target deltas per second for --runs (0: unpaced)")
	clients := fs.Int("clients", 1, "WebSocket clients per session for --runs")
	coalesce := fs.Duration("coalesce", 30*time.Millisecond, "delta coalescing window for the coalesced cases")
	cancels := fs.Int("cancel", -1, "runs for the cancel-latency case (default 200)")
	idle := fs.Int("idle", -1, "runs parked on one worker for the memory case (default 1000)")
	keep := fs.Bool("keep", false, "keep the working directory")
	telemetry := fs.Bool("telemetry", false, "run the streaming cases with traces off and then on (OTLP from every service), instead of the suite")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "clopen-bench-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	o := bench.DefaultOptions(dir)
	o.Coalesce, o.Progress = *coalesce, stdout
	logs, err := os.Create(filepath.Join(dir, "services.log"))
	if err != nil {
		return err
	}
	defer logs.Close()
	o.Logs = logs
	if *quick {
		o.Cases = []bench.Case{{Runs: 20, Deltas: 200, Rate: 1000, Clients: 1}, {Runs: 100, Deltas: 300, Rate: 10_000, Clients: 1}}
		o.Coalesced = []bench.Case{{Runs: 100, Deltas: 1000, Rate: 50_000, Clients: 1}}
		o.CancelRuns, o.IdleRuns = 40, 200
	}
	if *runs > 0 {
		o.Cases = []bench.Case{{Runs: *runs, Deltas: *deltas, Rate: *rate, Clients: *clients}}
		o.Coalesced = nil
	}
	if *telemetry {
		o.Telemetry, o.Baseline = true, false
	}
	if *cancels >= 0 {
		o.CancelRuns = *cancels
	}
	if *idle >= 0 {
		o.IdleRuns = *idle
	}

	dbURL, stopDB, err := devDatabase(ctx, getenv, dir, logging.Discard())
	if err != nil {
		return err
	}
	defer stopDB()
	pool, err := pgdb.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	for _, s := range stack.Schemas {
		if _, err := pgdb.Migrate(ctx, pool, s, nil); err != nil {
			pool.Close()
			return err
		}
	}
	pool.Close()
	o.DatabaseURL = dbURL

	rep, err := bench.Run(ctx, o)
	if err != nil {
		return fmt.Errorf("bench: %w (service logs in %s)", err, logs.Name())
	}
	rep.WriteTable(stdout)
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encode the report: %w", err)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nreport written to %s\n", *out)
	return nil
}
