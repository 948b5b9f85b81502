// Package streammgr owns chat sessions, their messages, runs and the event
// log. It starts turns, consumes every engine event in order, persists it
// idempotently, routes it into chat events for clients, drives the run state
// machine and reaps lost runs.
package streammgr

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"golang.org/x/sync/errgroup"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bytesize"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/natsx"
	"clopen.dev/pkg/platform/servepg"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/store"
)

// Name is the service name on the bus and in logs.
const Name = "streammgr"

// Config tunes streammgr.
type Config struct {
	Streams StreamSettings
	// MaxPromptBytes limits a prompt's text and attachments.
	MaxPromptBytes int
	// AckWait is how long an event may stay unacknowledged before JetStream
	// redelivers it (after a crash of the instance that had it).
	AckWait time.Duration
	// SweepEvery is how often unfinished runs are checked against leases.
	SweepEvery time.Duration
	// LeaseGrace is how long after its claim a run may lack a lease before
	// the sweeper declares it lost (the watcher usually does it sooner).
	LeaseGrace time.Duration
	// RepublishAfter is how long a dispatched run may stay unclaimed before
	// its job is published again.
	RepublishAfter time.Duration
	// Writers is how many transactions write the event log at once. Each
	// session belongs to one writer, so a session's events commit in order;
	// sessions commit in parallel, overlapping Postgres round trips and WAL
	// flushes. Each writer holds a pool connection while it commits.
	Writers int
	// StallAfter is how long a routed event may wait for its commit before
	// streammgr reports itself not ready (a writer stuck retrying, waiting
	// on a lock, or falling behind).
	StallAfter time.Duration
	// TenantMaxConcurrent and TenantMaxQueued are the admission limits of a
	// tenant without its own (streammgr.tenant_limits): how many of its runs
	// may be dispatched at once, and how many may wait; 0 is the default.
	TenantMaxConcurrent, TenantMaxQueued int
	// TenantWorkspaceQuota caps the files a tenant's sessions hold, summed
	// over each session's newest snapshot: a send beyond it is refused
	// (507 workspace_quota) until sessions are deleted. Negative: no quota
	// (CLOPEN_TENANT_WORKSPACE_QUOTA, 0 there meaning none; default
	// DefaultTenantWorkspaceQuota).
	TenantWorkspaceQuota int64
	// RetryLost retries a run that becomes lost once, automatically (never
	// the retry of a retry), as POST /v1/runs/{id}/retry would: the turn
	// runs again from the files it started from, and its tools run again,
	// so what they did outside the workspace (a push, a request) may happen
	// twice. Off by default (CLOPEN_RETRY_LOST).
	RetryLost bool
	// MetricsWithoutTenant leaves the tenant out of the budget metric's
	// attributes (CLOPEN_METRICS_TENANT=off), as the workers do for theirs.
	MetricsWithoutTenant bool
	// Tokens are the caller tokens' public key and the dispatch tokens'
	// signing key (TokenKeys): streammgr does not start without them.
	Tokens bustoken.Keys
}

// DefaultTenantWorkspaceQuota is the files one tenant's sessions may hold
// unless the deployment says otherwise.
const DefaultTenantWorkspaceQuota = 50 << 30

// TokenKeys are the bus token keys streammgr needs: it verifies the
// gateway's caller tokens and signs the dispatch tokens of its jobs.
var TokenKeys = bustoken.Need{CallerPubKey: true, DispatchKey: true}

// DefaultConfig returns the configuration `clopen dev` uses.
func DefaultConfig() Config {
	return Config{Streams: DefaultStreamSettings(), MaxPromptBytes: 256 << 10, AckWait: 10 * time.Second,
		SweepEvery: 10 * time.Second, LeaseGrace: 20 * time.Second, RepublishAfter: 30 * time.Second, Writers: 2,
		StallAfter: 30 * time.Second, TenantMaxConcurrent: DefaultTenantLimits.MaxConcurrent,
		TenantMaxQueued: DefaultTenantLimits.MaxQueued, TenantWorkspaceQuota: DefaultTenantWorkspaceQuota}
}

// Deps are the connections streammgr runs on; the caller owns them.
type Deps struct {
	NATS   *nats.Conn
	DB     *pgxpool.Pool
	Logger *slog.Logger
	Health *health.Registry
}

// Run serves until ctx ends, then stops its endpoints and consumers.
func Run(ctx context.Context, cfg Config, d Deps) error {
	if err := cfg.Tokens.Check(TokenKeys); err != nil {
		return fmt.Errorf("streammgr: %w", err)
	}
	runs, err := cfg.Tokens.DispatchSigner()
	if err != nil {
		return err
	}
	js, err := jetstream.New(d.NATS, jetstream.WithPublishAsyncMaxPending(8192), jetstream.WithPublishAsyncTimeout(3*time.Second))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if err := natsx.RequireServer(ctx, d.NATS); err != nil {
		return err
	}
	if err := DeclareStreams(ctx, js, cfg.Streams); err != nil {
		return err
	}
	zeroCounters(ctx)
	jobStats, err := observeJobs(ctx, js)
	if err != nil {
		return err
	}
	defer func() { _ = jobStats.Unregister() }()
	m := &Manager{cfg: cfg, db: d.DB, nc: d.NATS, js: js, log: d.Logger, bus: bus{js: js, log: d.Logger, runs: runs}}
	if m.flags, err = js.KeyValue(ctx, events.BucketRunCtl); err != nil {
		return err
	}
	m.pipe = newPipeline(cfg, d.DB, d.NATS, js, d.Logger)
	m.pipe.bus = m.bus
	m.disp = &dispatcher{db: d.DB, bus: m.bus, flags: m.flags, log: d.Logger, prompt: m.buildEnginePrompt,
		prime: m.pipe.prime, forget: m.pipe.markDeleted, admit: newTenantSet(),
		limits: store.Limits{MaxConcurrent: cmp.Or(cfg.TenantMaxConcurrent, DefaultTenantLimits.MaxConcurrent),
			MaxQueued: cmp.Or(cfg.TenantMaxQueued, DefaultTenantLimits.MaxQueued)}, retryLost: cfg.RetryLost}
	m.pipe.disp = m.disp
	m.watch = newBudgetWatch(m, !cfg.MetricsWithoutTenant)
	m.disp.watch, m.pipe.watch = m.watch, m.watch
	s, err := micro.AddService(d.NATS, micro.Config{Name: Name, Version: "0.1.0",
		Description: "chat sessions, runs and the event log"})
	if err != nil {
		return fmt.Errorf("add micro service: %w", err)
	}
	srv := svc.NewServer(ctx, d.NATS, s, cfg.Tokens.Verifier()) // stops the service when ctx ends
	defer srv.Stop()
	if err := m.endpoints(s, srv); err != nil {
		return err
	}
	stallAfter := cmp.Or(cfg.StallAfter, DefaultConfig().StallAfter)
	d.Health.Add(Name, func(ctx context.Context) error {
		if err := d.DB.Ping(ctx); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
		return m.pipe.prog.check(ctx, stallAfter)
	})
	defer d.Health.Remove(Name)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.pipe.run(gctx) })
	g.Go(func() error { return m.disp.admitLoop(gctx, cmp.Or(cfg.SweepEvery, DefaultConfig().SweepEvery)) })
	g.Go(func() error { return m.watch.run(gctx) })
	for n, writes := range m.pipe.writes {
		g.Go(func() error { return m.pipe.writeLoop(gctx, n, writes) })
	}
	g.Go(func() error {
		// The workers declare their buckets; streammgr serves without them
		// and starts reaping once they exist.
		owners, err := natsx.WaitKV(gctx, js, events.BucketRunOwner)
		if err != nil {
			return nil // ctx ended
		}
		workers, err := natsx.WaitKV(gctx, js, events.BucketWorkers)
		if err != nil {
			return nil
		}
		m.setBuckets(owners, workers)
		return m.reap(gctx)
	})
	d.Logger.InfoContext(ctx, "streammgr ready")
	err = g.Wait()
	m.pipe.chat.wait() // the pipeline, the only publisher, has stopped
	return err
}

// Serve runs streammgr as its own process, configured from the environment.
func Serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	p, closeAll, err := servepg.Start(ctx, getenv, stderr, servepg.Options{Name: Name, Schema: Schema})
	if err != nil {
		return err
	}
	defer closeAll()
	cfg := DefaultConfig()
	if v := getenv("CLOPEN_STREAM_REPLICAS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5 {
			return fmt.Errorf("CLOPEN_STREAM_REPLICAS=%q: want 1 to 5", v)
		}
		cfg.Streams.Replicas = n
	}
	if v := getenv("CLOPEN_STREAMMGR_WRITERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			return fmt.Errorf("CLOPEN_STREAMMGR_WRITERS=%q: want 1 to 64", v)
		}
		cfg.Writers = n
	}
	for _, v := range []struct {
		name     string
		min, max int
		into     *int
	}{
		{"CLOPEN_TENANT_MAX_CONCURRENT", 1, maxConcurrentLimit, &cfg.TenantMaxConcurrent},
		{"CLOPEN_TENANT_MAX_QUEUED", 1, maxQueuedLimit, &cfg.TenantMaxQueued},
	} {
		if s := getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < v.min || n > v.max {
				return fmt.Errorf("%s=%q: want %d to %d", v.name, s, v.min, v.max)
			}
			*v.into = n
		}
	}
	if v := getenv("CLOPEN_TENANT_WORKSPACE_QUOTA"); v != "" {
		n, err := bytesize.Parse(v)
		if err != nil {
			return fmt.Errorf("CLOPEN_TENANT_WORKSPACE_QUOTA=%q: %w (0: no quota)", v, err)
		}
		cfg.TenantWorkspaceQuota = cmp.Or(n, -1)
	}
	switch v := getenv("CLOPEN_METRICS_TENANT"); v {
	case "", "on":
	case "off":
		cfg.MetricsWithoutTenant = true
	default:
		return fmt.Errorf("CLOPEN_METRICS_TENANT=%q: want on or off", v)
	}
	if v := getenv("CLOPEN_RETRY_LOST"); v != "" {
		if cfg.RetryLost, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("CLOPEN_RETRY_LOST=%q: want true or false", v)
		}
	}
	if cfg.Tokens, err = bustoken.FromEnv(getenv); err != nil {
		return err
	}
	return Run(ctx, cfg, Deps{NATS: p.NATS, DB: p.DB, Logger: p.Logger, Health: p.Health})
}
