package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/cmd/clopen/internal/bench"
	"clopen.dev/cmd/clopen/internal/stack"
	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/fakellm"
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
	holderFiles := fs.Int("holder", 0, "instead of the suite, time turns on the worker holding their snapshot: a workspace of this many files (20000 ≈ 200 MB) against an empty one")
	holderTurns := fs.Int("holder-turns", 40, "turns of each session for --holder")
	holderEngine := fs.String("holder-engine", "", "run the --holder turns on this installed engine against a fakellm started here (default: the scripted engine)")
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
	o.HolderFiles, o.HolderTurns = *holderFiles, *holderTurns
	if *holderEngine != "" {
		typ, err := events.ParseEngineType(*holderEngine)
		if err != nil {
			return fmt.Errorf("bench: --holder-engine: %w", err)
		}
		url, stopLLM, err := fakellm.New(fakellm.Config{Logger: logging.Discard()}).Start("127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("bench: fakellm: %w", err)
		}
		defer stopLLM()
		o.HolderEngine, o.LLMBaseURL = typ, url
		o.EnginesDir = engines.SetupFromEnv(engines.DefaultDataDir(getenv), getenv, nil).Root()
	}
	if *cancels >= 0 {
		o.CancelRuns = *cancels
	}
	if *idle >= 0 {
		o.IdleRuns = *idle
	}

	serverURL, stopDB, err := devDatabase(ctx, getenv, dir, logging.Discard())
	if err != nil {
		return err
	}
	defer stopDB()
	// A database of its own: a second run on the same server must not meet
	// the first's sealed credentials (artifacts' master key is per run).
	dbURL, dropDB, err := freshDatabase(ctx, serverURL, "clopen_bench_")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer dropDB()
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

// freshDatabase creates an empty database named prefix plus a random
// suffix on the server of serverURL and returns its URL, and a func that
// drops it.
func freshDatabase(ctx context.Context, serverURL, prefix string) (string, func(), error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("connect to postgres: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u.Path = "/" + name
	return u.String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, serverURL); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = c.Close(ctx)
		}
	}, nil
}
