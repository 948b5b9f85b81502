package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/services/engine-worker/engines"
)

// Case is one streaming load.
type Case struct {
	Runs    int     `json:"runs"`
	Deltas  int     `json:"deltas_per_run"`
	Rate    float64 `json:"target_deltas_per_sec"`
	Clients int     `json:"clients_per_session"`
}

// Options configures a benchmark run.
type Options struct {
	Binary      string
	Dir         string
	DatabaseURL string
	Cases       []Case        // with delta coalescing off: every delta is one event
	Coalesced   []Case        // with the worker's coalescing window
	Coalesce    time.Duration // the window for Coalesced
	CancelRuns  int
	IdleRuns    int
	Baseline    bool
	// Telemetry, instead of the suite, runs Cases twice: with traces off
	// and with every service exporting them over OTLP (to a sink in this
	// process), metrics on in both.
	Telemetry bool
	// HolderFiles, instead of the suite, measures a turn on the worker that
	// holds its session's snapshot, with a workspace of this many files
	// against an empty one (HolderTurns turns each).
	HolderFiles, HolderTurns int
	// HolderEngine runs the holder turns on this engine (installed under
	// EnginesDir, against LLMBaseURL) instead of the scripted one.
	HolderEngine           events.EngineType
	EnginesDir, LLMBaseURL string
	Progress               io.Writer
	Logs                   io.Writer
}

// Report is everything measured, with ratios to the baseline.
type Report struct {
	At        time.Time        `json:"at"`
	CPUs      int              `json:"cpus"`
	Go        string           `json:"go"`
	Baseline  *Baseline        `json:"baseline,omitempty"`
	Streams   []StreamResult   `json:"streams"`
	Coalesced []StreamResult   `json:"coalesced"`
	Cancel    *CancelResult    `json:"cancel,omitempty"`
	Idle      *IdleResult      `json:"idle,omitempty"`
	Slow      *SlowResult      `json:"slow_client,omitempty"`
	Telemetry *TelemetryResult `json:"telemetry,omitempty"`
	Holder    *HolderResult    `json:"holder,omitempty"`
}

// Run measures, in this order: the raw baseline, the uncoalesced streaming
// cases, cancel latency, idle runs and a slow client on one system; then the
// coalesced cases on a system whose workers coalesce deltas.
func Run(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{At: time.Now().UTC(), CPUs: runtime.NumCPU(), Go: runtime.Version()}
	db, err := pgdb.Open(ctx, o.DatabaseURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	say := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	masterKey := NewMasterKey()
	// start starts a system; all is extra environment for every service,
	// env for the worker.
	start := func(name string, all []string, env ...string) (*System, tenant, error) {
		say("starting Clopen as separate processes (%s)", name)
		capacity := max(o.IdleRuns+100, 256)
		sys, err := StartSystem(ctx, SystemConfig{Binary: o.Binary, Dir: filepath.Join(o.Dir, name), DatabaseURL: o.DatabaseURL,
			Workers: 1, Logs: o.Logs, Env: all, MasterKey: masterKey, WorkerEnv: append([]string{fmt.Sprintf("CLOPEN_WORKER_CAPACITY=%d", capacity)}, env...)})
		if err != nil {
			return nil, tenant{}, err
		}
		tn, err := newTenant(ctx, db, sys.URL)
		if err != nil {
			sys.Stop()
			return nil, tenant{}, err
		}
		return sys, tn, nil
	}

	if o.HolderFiles > 0 {
		var env []string
		if o.HolderEngine != "" {
			env = []string{"CLOPEN_ENGINES_DIR=" + o.EnginesDir, "CLOPEN_LLM_BASE_URL=" + o.LLMBaseURL, engines.EnvOperatorCredentials + "=1"}
		}
		sys, tn, err := start("holder", nil, env...)
		if err != nil {
			return nil, err
		}
		defer sys.Stop()
		say("holder: %d turns each in an empty workspace and one of %d files", o.HolderTurns, o.HolderFiles)
		h, err := holder(ctx, tn, o.HolderEngine, filepath.Join(o.Dir, "holder", "workspaces"), o.HolderFiles, max(o.HolderTurns, 1), o.Progress)
		if err != nil {
			return nil, err
		}
		rep.Holder = &h
		return rep, nil
	}
	if o.Telemetry {
		t, err := tracesOffAndOn(ctx, o, db, start, say)
		if err != nil {
			return nil, err
		}
		rep.Telemetry = t
		return rep, nil
	}

	sys, tn, err := start("uncoalesced", nil, "CLOPEN_COALESCE=0")
	if err != nil {
		return nil, err
	}
	if o.Baseline {
		b := &Baseline{}
		say("baseline: raw JetStream publish → consume")
		if b.JetStreamMsgsPerSec, _, err = JetStreamBaseline(ctx, sys.NATSURL, 200_000, 200, 0); err != nil {
			sys.Stop()
			return nil, fmt.Errorf("jetstream baseline: %w", err)
		}
		if _, b.JetStreamLatency, err = JetStreamBaseline(ctx, sys.NATSURL, 50_000, 200, 10_000); err != nil {
			sys.Stop()
			return nil, fmt.Errorf("jetstream baseline: %w", err)
		}
		say("baseline: raw Postgres unnest batch insert")
		if b.PostgresRowsPerSec, b.PostgresBatch, err = PostgresBaseline(ctx, db, 200_000, 1000, 200); err != nil {
			sys.Stop()
			return nil, fmt.Errorf("postgres baseline: %w", err)
		}
		rep.Baseline = b
	}
	for _, c := range o.Cases {
		say("stream: %d runs × %d deltas at %.0f deltas/s, %d client(s) each, no coalescing", c.Runs, c.Deltas, c.Rate, c.Clients)
		lag0 := sys.Histogram("streammgr", commitLagMetric)
		r, err := stream(ctx, sys, db, tn, c.Runs, c.Deltas, max(c.Clients, 1), c.Rate, o.Progress)
		if err != nil {
			sys.Stop()
			return nil, err
		}
		lag1 := sys.Histogram("streammgr", commitLagMetric)
		lag, over := Beyond(Quantile(lag0, lag1, 0.99), lag1)
		r.CommitLagP99Ms, r.CommitLagP99Over = lag*1000, over
		rep.Streams = append(rep.Streams, r)
	}
	if o.CancelRuns > 0 {
		say("cancel: %d runs", o.CancelRuns)
		r, err := cancels(ctx, tn, o.CancelRuns, o.Progress)
		if err != nil {
			sys.Stop()
			return nil, err
		}
		rep.Cancel = &r
	}
	if o.IdleRuns > 0 {
		say("idle: %d runs parked on one worker", o.IdleRuns)
		r, err := idle(ctx, sys, db, tn, o.IdleRuns, o.Progress)
		if err != nil {
			sys.Stop()
			return nil, err
		}
		rep.Idle = &r
	}
	say("slow client: a WebSocket client that stops reading")
	slow, err := slowClient(ctx, sys, tn)
	if err != nil {
		sys.Stop()
		return nil, err
	}
	rep.Slow = &slow
	sys.Stop()

	if len(o.Coalesced) > 0 {
		sys, tn, err = start("coalesced", nil, "CLOPEN_COALESCE="+o.Coalesce.String())
		if err != nil {
			return nil, err
		}
		defer sys.Stop()
		for _, c := range o.Coalesced {
			say("stream: %d runs × %d deltas at %.0f deltas/s, %d client(s) each, coalescing %v", c.Runs, c.Deltas, c.Rate, c.Clients, o.Coalesce)
			lag0 := sys.Histogram("streammgr", commitLagMetric)
			r, err := stream(ctx, sys, db, tn, c.Runs, c.Deltas, max(c.Clients, 1), c.Rate, o.Progress)
			if err != nil {
				return nil, err
			}
			lag1 := sys.Histogram("streammgr", commitLagMetric)
			lag, over := Beyond(Quantile(lag0, lag1, 0.99), lag1)
			r.CommitLagP99Ms, r.CommitLagP99Over = lag*1000, over
			rep.Coalesced = append(rep.Coalesced, r)
		}
	}
	return rep, nil
}

// commitLagMetric is streammgr's histogram of worker emit → Postgres commit.
const commitLagMetric = "clopen_streammgr_commit_lag_seconds"

// DefaultOptions is the suite `clopen bench` runs without flags.
func DefaultOptions(dir string) Options {
	bin, _ := os.Executable()
	return Options{Binary: bin, Dir: dir, Baseline: true, CancelRuns: 200, IdleRuns: 1000, Coalesce: 30 * time.Millisecond,
		Cases: []Case{
			{Runs: 50, Deltas: 200, Rate: 1_000, Clients: 1},
			{Runs: 200, Deltas: 500, Rate: 10_000, Clients: 1},
			{Runs: 200, Deltas: 500, Rate: 10_000, Clients: 3},
			{Runs: 1000, Deltas: 100, Rate: 10_000, Clients: 1},
		},
		Coalesced: []Case{
			{Runs: 200, Deltas: 2_000, Rate: 50_000, Clients: 1},
			{Runs: 200, Deltas: 4_000, Rate: 100_000, Clients: 1},
		},
	}
}
