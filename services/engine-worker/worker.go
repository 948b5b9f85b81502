// Package worker is the engine worker: it pulls jobs for the engines it has,
// owns each run it claims through a lease, drives the engine adapter,
// publishes the run's events and obeys control messages addressed to it.
// It holds no database connection.
package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"golang.org/x/sync/errgroup"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/natsx"
	"clopen.dev/pkg/platform/sandbox"
	"clopen.dev/pkg/platform/servekit"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/scripted"
	"clopen.dev/services/engine-worker/internal/mcpproxy"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// Name is the service name on the bus and in logs.
const Name = "engine-worker"

// Config tunes a worker.
type Config struct {
	ID       string // unique per process; defaults to hostname-pid
	Capacity int    // concurrent runs
	Replicas int    // of the buckets it declares
	// Workspaces is where runs work: each chat session in
	// <Workspaces>/<tenant>/<project>/sessions/<session>.
	Workspaces string
	// SnapshotCache is where the worker remembers the content hashes of
	// the files it captured, so a capture reads only files that changed.
	// Empty means <Workspaces>/../snapshot-cache.
	SnapshotCache string
	// WorkspaceQuota caps a session workspace in bytes: a turn that leaves
	// more is not saved (the user is told). 0 means no cap.
	WorkspaceQuota int64
	// EngineConfig holds the isolated engine config dirs: each chat
	// session's, which its runs' artifacts plans are applied to
	// (<EngineConfig>/<tenant>/sessions/<session>/<engine>/<account>), and
	// each account's, for catalogs and generations
	// (<EngineConfig>/<tenant>/<engine>/<account>). Empty means
	// <Workspaces>/../engine-config.
	EngineConfig string
	// Coalesce is the text-delta coalescing window; 0 publishes every delta.
	Coalesce time.Duration
	// ShutdownGrace is how long a stopping worker lets interrupted runs end
	// before it cancels them.
	ShutdownGrace time.Duration
	// PreferFor is how long after a job is queued this worker leaves it to
	// the worker holding its session's snapshot (prefer.go); 0 never does.
	PreferFor time.Duration
	// UsageEvery is how often a running turn's metered usage goes out as a
	// usage event while it changes (budgets stop a turn from it); 0 means
	// DefaultUsageEvery.
	UsageEvery time.Duration
	// ScenarioDir holds extra scenarios for the scripted engine.
	ScenarioDir string
	// MetricsWithoutTenant leaves the tenant out of the GenAI metrics'
	// attributes (CLOPEN_METRICS_TENANT=off), for a fleet with so many
	// tenants that a series each is too many.
	MetricsWithoutTenant bool
	// GitAllowLocal lets a project's repository be a local path or file://
	// URL (CLOPEN_GIT_ALLOW_LOCAL=on): for tests and `clopen dev` only,
	// since it lets a tenant read the worker's disk.
	GitAllowLocal bool
	// GitCAFile, when set, is a PEM bundle git trusts for https remotes
	// (CLOPEN_GIT_CA_FILE), for a forge behind a private CA.
	GitCAFile string
	// Tokens hold the caller tokens' public key (TokenKeys): the worker
	// serves the gateway's catalog and generation requests only with it.
	// A run's own token comes with its job (events.Job.DispatchToken).
	// With MCPBridgeURL they also hold the mcp tokens' signing key.
	Tokens bustoken.Keys
	// MCPBridgeURL is the MCP bridge's base URL (CLOPEN_MCP_BRIDGE_URL):
	// every run gets its internal tools as the MCP server "clopen",
	// through the worker's MCP proxy. Empty gives runs no bridge.
	MCPBridgeURL string
}

// TokenKeys are the bus token keys a worker is given: it verifies the
// gateway's caller tokens on its engine endpoints, and signs its runs'
// mcp tokens (needed only with an MCP bridge).
var TokenKeys = bustoken.Need{CallerPubKey: true, MCPKey: true}

// DefaultConfig returns the configuration `clopen dev` uses.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		ID:            fmt.Sprintf("%s-%d", host, os.Getpid()),
		Capacity:      16,
		Replicas:      1,
		Workspaces:    filepath.Join(os.TempDir(), "clopen-workspaces"),
		Coalesce:      30 * time.Millisecond,
		ShutdownGrace: 3 * time.Second,
		PreferFor:     DefaultPreferFor,
	}
}

// Deps are the connections the worker runs on; the caller owns them.
type Deps struct {
	NATS *nats.Conn
	// Control, when set, carries the control plane (leases, heartbeats,
	// control requests) apart from the event publications on NATS, so a
	// flood of events never delays a lease renewal. Nil means NATS.
	Control *nats.Conn
	Logger  *slog.Logger
	Health  *health.Registry
	// Engines are the adapters this worker offers besides the scripted
	// engine, which every worker has (an entry for it replaces it). Build
	// them with engines.Available, which offers only the ready ones.
	Engines map[events.EngineType]engine.Factory
	// Versions are the installed versions of Engines where already known
	// (engines.Offer returns them); the worker asks the others' adapters.
	Versions map[events.EngineType]string
	// Later, when set, runs for the worker's life and tells it of engines
	// that become ready after the start and of offered engines whose install
	// is gone (engines.Pending.Watch): the worker takes a new engine's
	// jobs, serves its endpoints and advertises it in its heartbeat, and
	// stops all three for a withdrawn one (its running turns go on).
	Later func(ctx context.Context, changes engines.Changes)
	// Proxies, when set, are the model proxies of the confined agents
	// (engines.Sandboxing's): each run's usage as they metered it goes on
	// its terminal event. Nil meters nothing.
	Proxies *modelproxy.Pool
	// MCP, when set, is the MCP proxy of the confined agents
	// (engines.Sandboxing's); nil with an MCP bridge makes a loopback one.
	MCP *mcpproxy.Proxy
}

// Worker runs jobs. Build one with New; Run serves until ctx ends.
type Worker struct {
	cfg    Config
	nc     *nats.Conn          // control plane: leases, heartbeats, control requests
	bus    *nats.Conn          // events, and the engine endpoints (catalogs, generation)
	js     jetstream.JetStream // event publications
	cjs    jetstream.JetStream // control plane
	log    *slog.Logger
	health *health.Registry
	pool   *engine.Pool

	owners, flags, beats jetstream.KeyValue
	slots                chan struct{}
	started              time.Time
	known                map[events.EngineType]string // Deps.Versions
	later                func(context.Context, engines.Changes)
	proxies              *modelproxy.Pool
	mcp                  *mcpproxy.Proxy // nil: runs get no MCP bridge

	// snapStore holds the sessions' snapshots (Run binds it), snapCache
	// the content hashes of what this worker captured, snapMemo the
	// manifests it loaded or captured last.
	snapStore snapshot.Store
	snapCache *snapshot.Cache
	snapMemo  *snapshot.Memo

	catalogs     catalogCache
	artifactRevs sync.Map // tenant -> the last artifact revision applied

	vmu       sync.Mutex
	versions  map[events.EngineType]string               // the engines offered, with their versions
	unready   map[events.EngineType]events.EngineProblem // the engines not offered, and why
	endpoints micro.Service                              // the engine endpoints, once served
	server    *svc.Server                                // runs their requests
	served    map[events.EngineType]bool                 // the engines endpoints has
	pulls     map[events.EngineType]context.CancelFunc
	reserve   chan struct{} // makes serveEngines build its service again

	mu   sync.Mutex
	runs map[string]*run
	ctl  chan *nats.Msg // control requests of every run this worker owns
}

// New prepares a worker; nothing runs until Run.
func New(cfg Config, d Deps) (*Worker, error) {
	if cfg.Capacity < 1 {
		return nil, fmt.Errorf("worker capacity %d: want at least 1", cfg.Capacity)
	}
	zeroCounters(context.Background())
	if err := events.ValidToken(cfg.ID); err != nil {
		return nil, fmt.Errorf("worker id: %w", err)
	}
	if err := cfg.Tokens.Check(bustoken.Need{CallerPubKey: true, MCPKey: cfg.MCPBridgeURL != ""}); err != nil {
		return nil, fmt.Errorf("engine-worker: %w", err)
	}
	mcp, err := mcpProxy(cfg, d.MCP)
	if err != nil {
		return nil, err
	}
	if cfg.EngineConfig == "" {
		cfg.EngineConfig = filepath.Join(filepath.Dir(filepath.Clean(cfg.Workspaces)), "engine-config")
	}
	if cfg.SnapshotCache == "" {
		cfg.SnapshotCache = filepath.Join(filepath.Dir(filepath.Clean(cfg.Workspaces)), "snapshot-cache")
	}
	cache, err := snapshot.NewCache(cfg.SnapshotCache)
	if err != nil {
		return nil, fmt.Errorf("snapshot cache: %w", err)
	}
	// A publication lost in flight (its server died) must fail, to be sent
	// again under the same Msg-Id, rather than wait forever.
	js, err := jetstream.New(d.NATS, jetstream.WithPublishAsyncMaxPending(4096), jetstream.WithPublishAsyncTimeout(3*time.Second))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	control := d.Control
	if control == nil {
		control = d.NATS
	}
	cjs, err := jetstream.New(control)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	factories := maps.Clone(d.Engines)
	if factories == nil {
		factories = map[events.EngineType]engine.Factory{}
	}
	if _, ok := factories[events.EngineScripted]; !ok {
		lib, err := scripted.LoadLibrary(cfg.ScenarioDir)
		if err != nil {
			return nil, err
		}
		eng := scripted.New(lib)
		factories[events.EngineScripted] = func(context.Context, engine.Key) (engine.Engine, error) { return eng, nil }
	}
	return &Worker{cfg: cfg, nc: control, bus: d.NATS, js: js, cjs: cjs, log: d.Logger, health: d.Health, pool: engine.NewPool(factories),
		slots: make(chan struct{}, cfg.Capacity), runs: map[string]*run{}, ctl: make(chan *nats.Msg, 1024),
		versions: map[events.EngineType]string{}, known: maps.Clone(d.Versions), later: d.Later,
		proxies: d.Proxies, mcp: mcp, snapCache: cache, snapMemo: snapshot.NewMemo(manifestMemo),
		pulls: map[events.EngineType]context.CancelFunc{}, reserve: make(chan struct{}, 1)}, nil
}

// mcpProxy is the proxy through which runs reach cfg.MCPBridgeURL: have,
// or a loopback one for unconfined agents; nil without a bridge.
func mcpProxy(cfg Config, have *mcpproxy.Proxy) (*mcpproxy.Proxy, error) {
	if cfg.MCPBridgeURL == "" {
		return nil, nil
	}
	signer, err := cfg.Tokens.MCPSigner()
	if err != nil {
		return nil, err
	}
	p := have
	if p == nil {
		if p, err = mcpproxy.ListenLoopback(); err != nil {
			return nil, err
		}
	}
	if err := p.Configure(cfg.MCPBridgeURL, signer); err != nil {
		return nil, err
	}
	return p, nil
}

// Run serves until ctx ends, then stops pulling, interrupts its runs, cancels
// those still going after the grace period, and returns once every run has
// published its terminal event.
func (w *Worker) Run(ctx context.Context) error {
	w.started = time.Now()
	if err := DeclareBuckets(ctx, w.cjs, w.cfg.Replicas); err != nil {
		return err
	}
	var err error
	if w.owners, err = w.cjs.KeyValue(ctx, events.BucketRunOwner); err != nil {
		return err
	}
	if w.beats, err = w.cjs.KeyValue(ctx, events.BucketWorkers); err != nil {
		return err
	}
	if w.flags, err = natsx.WaitKV(ctx, w.cjs, events.BucketRunCtl); err != nil {
		return err
	}
	// Bulk transfers go on the event connection, never the control plane's.
	if w.snapStore, err = snapshot.ObjectStore(ctx, w.js, events.BucketSnapshots, w.cfg.Replicas); err != nil {
		return fmt.Errorf("snapshot store: %w", err)
	}
	jobs, err := natsx.WaitStream(ctx, w.js, events.StreamJobs)
	if err != nil {
		return err
	}
	consumers, err := w.consumers(ctx, jobs)
	if err != nil {
		return err
	}
	w.health.Add(Name, func(context.Context) error {
		if !w.nc.IsConnected() {
			return errors.New("nats not connected")
		}
		return nil
	})
	defer w.health.Remove(Name)

	// Pulling stops when ctx ends; runs keep their own context so they can be
	// stopped in order below.
	runsCtx, stopRuns := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopRuns(errShutdown)
	var runWG sync.WaitGroup
	g, gctx := errgroup.WithContext(ctx)
	for typ, c := range consumers {
		pctx := w.pulling(gctx, typ)
		g.Go(func() error { return w.pull(pctx, runsCtx, &runWG, typ, c) })
	}
	g.Go(func() error { return w.control(gctx) })
	g.Go(func() error { return w.maintain(gctx) })
	g.Go(func() error { return w.watchFlags(gctx) })
	g.Go(func() error { return w.watchArtifacts(gctx) })
	g.Go(func() error { return w.serveEngines(gctx) })
	if w.later != nil {
		g.Go(func() error {
			w.later(gctx, engines.Changes{
				Offer: func(typ events.EngineType, f engine.Factory, version string) {
					c, err := w.offer(gctx, jobs, typ, f, version)
					if err != nil {
						w.log.WarnContext(gctx, "engine became ready but is not offered", "engine", typ, "err", err)
						return
					}
					pctx := w.pulling(gctx, typ)
					g.Go(func() error { return w.pull(pctx, runsCtx, &runWG, typ, c) })
				},
				Withdraw: func(typ events.EngineType, why string) { w.withdraw(gctx, typ, why) },
				Unready:  func(typ events.EngineType, st engines.State, fix string) { w.setUnready(gctx, typ, st, fix) },
			})
			return nil
		})
	}
	w.log.InfoContext(ctx, "engine worker ready", "worker_id", w.cfg.ID, "capacity", w.cfg.Capacity, "engines", w.engineVersions())
	err = g.Wait()

	w.drain(&runWG)
	w.pool.Dispose(context.Background())
	if derr := w.beats.Delete(context.Background(), w.cfg.ID); derr != nil && !errors.Is(derr, jetstream.ErrKeyNotFound) {
		w.log.Warn("delete heartbeat", "err", derr)
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// versionTimeout bounds how long an engine may take to report its version
// at start; one that hangs is not offered rather than holding up the rest.
const versionTimeout = 60 * time.Second

// consumers creates the job consumer of each engine this worker offers and
// records the engine's version; an engine that cannot report one is not
// offered (its jobs wait for a worker that has it). The versions are asked
// for all at once: each may start a CLI, and one after another they would
// keep a worker with many engines from serving for tens of seconds.
func (w *Worker) consumers(ctx context.Context, jobs jetstream.Stream) (map[events.EngineType]jetstream.Consumer, error) {
	types := w.pool.Types()
	versions := make([]string, len(types))
	errs := make([]error, len(types))
	var wg sync.WaitGroup
	for i, typ := range types {
		wg.Go(func() {
			vctx, cancel := context.WithTimeout(ctx, versionTimeout)
			defer cancel()
			versions[i], errs[i] = w.version(vctx, typ)
		})
	}
	wg.Wait()
	out := map[events.EngineType]jetstream.Consumer{}
	for i, typ := range types {
		version, err := versions[i], errs[i]
		if err != nil {
			w.log.WarnContext(ctx, "engine not offered", "engine", typ, "err", err)
			continue
		}
		c, err := jobConsumer(ctx, jobs, typ)
		if err != nil {
			return nil, err
		}
		if err := w.setVersion(typ, version); err != nil {
			return nil, err
		}
		out[typ] = c
	}
	if len(out) == 0 {
		return nil, errors.New("no engine is ready on this worker")
	}
	return out, nil
}

// jobConsumer creates or updates the durable consumer of typ's jobs.
func jobConsumer(ctx context.Context, jobs jetstream.Stream, typ events.EngineType) (jetstream.Consumer, error) {
	subject, err := events.JobSubject(string(typ))
	if err != nil {
		return nil, err
	}
	c, err := jobs.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       "engine-" + string(typ),
		Description:   "jobs for " + string(typ) + " workers",
		FilterSubject: subject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
		MaxDeliver:    10,
		BackOff:       nil,
		MaxAckPending: 100_000,
	})
	if err != nil {
		return nil, fmt.Errorf("job consumer for %s: %w", typ, err)
	}
	return c, nil
}

// offer adds an engine that became ready while the worker runs: the pool
// builds it, its jobs get a consumer (which the caller pulls), its
// endpoints are served and the heartbeat advertises it at once.
func (w *Worker) offer(ctx context.Context, jobs jetstream.Stream, typ events.EngineType, f engine.Factory, version string) (jetstream.Consumer, error) {
	if !w.pool.Add(typ, f) {
		return nil, fmt.Errorf("%s is offered already", typ)
	}
	c, err := jobConsumer(ctx, jobs, typ)
	if err != nil {
		return nil, err
	}
	if err := w.setVersion(typ, version); err != nil {
		return nil, err
	}
	w.heartbeat(ctx)
	return c, nil
}

// pulling is the context of typ's pull loop, ended when typ is withdrawn.
func (w *Worker) pulling(ctx context.Context, typ events.EngineType) context.Context {
	pctx, cancel := context.WithCancel(ctx)
	w.vmu.Lock()
	w.pulls[typ] = cancel
	w.vmu.Unlock()
	return pctx
}

// withdraw stops offering typ, whose install is gone: its pull loop ends
// (a job it fetched meanwhile is handed back), the heartbeat stops
// advertising it, its endpoints go, and its idle instances are disposed.
// Turns running on it go on with the instance they hold.
func (w *Worker) withdraw(ctx context.Context, typ events.EngineType, why string) {
	w.vmu.Lock()
	cancel, ok := w.pulls[typ]
	delete(w.pulls, typ)
	delete(w.versions, typ)
	w.vmu.Unlock()
	if !ok {
		return
	}
	cancel()
	w.pool.Remove(typ)
	select {
	case w.reserve <- struct{}{}:
	default: // a rebuild is due already
	}
	w.heartbeat(ctx)
	w.log.WarnContext(ctx, "engine withdrawn", "engine", typ, "why", why)
}

// setVersion records an offered engine, and serves its endpoints when the
// others' are served already.
func (w *Worker) setVersion(typ events.EngineType, version string) error {
	w.vmu.Lock()
	defer w.vmu.Unlock()
	w.versions[typ] = version
	if w.endpoints == nil {
		return nil
	}
	return w.addEndpoints(typ)
}

// engineVersions returns the engines offered, with their versions.
// setUnready records why typ is not offered and beats at once, so the
// gateway can say it (GET /v1/engines).
func (w *Worker) setUnready(ctx context.Context, typ events.EngineType, st engines.State, fix string) {
	w.vmu.Lock()
	if w.unready == nil {
		w.unready = map[events.EngineType]events.EngineProblem{}
	}
	w.unready[typ] = events.EngineProblem{Engine: typ, State: string(st), Fix: fix}
	w.vmu.Unlock()
	w.heartbeat(ctx)
}

// unreadyEngines returns the engines not offered, in name order.
func (w *Worker) unreadyEngines() []events.EngineProblem {
	w.vmu.Lock()
	defer w.vmu.Unlock()
	out := make([]events.EngineProblem, 0, len(w.unready))
	for typ, p := range w.unready {
		if _, offered := w.versions[typ]; !offered {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b events.EngineProblem) int { return strings.Compare(string(a.Engine), string(b.Engine)) })
	return out
}

func (w *Worker) engineVersions() map[events.EngineType]string {
	w.vmu.Lock()
	defer w.vmu.Unlock()
	return maps.Clone(w.versions)
}

func (w *Worker) version(ctx context.Context, typ events.EngineType) (string, error) {
	eng, release, err := w.pool.Acquire(ctx, engine.Key{Engine: typ})
	if err != nil {
		return "", err
	}
	defer release()
	if v := w.known[typ]; v != "" {
		return v, nil
	}
	if v, ok := eng.(engine.Versioned); ok {
		return v.Version(ctx)
	}
	return "unknown", nil
}

// pull fetches jobs of one engine, one at a time, only while a slot is free.
// Once ctx ends it returns after the fetch in flight, within a second. That
// fetch is not abandoned: the server could still hand it a job, which would
// then wait out the AckWait. A job that comes back after ctx ended is handed
// back (Nak) for another worker to take at once.
func (w *Worker) pull(ctx, runsCtx context.Context, wg *sync.WaitGroup, typ events.EngineType, c jetstream.Consumer) error {
	for ctx.Err() == nil {
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		batch, err := c.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			<-w.slots
			if ctx.Err() != nil {
				return nil
			}
			w.log.WarnContext(ctx, "fetch job", "engine", typ, "err", err)
			time.Sleep(250 * time.Millisecond)
			continue
		}
		started := false
		for msg := range batch.Messages() {
			if ctx.Err() != nil {
				_ = msg.Nak()
				continue
			}
			started = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-w.slots }()
				w.handle(runsCtx, msg)
			}()
		}
		if !started {
			<-w.slots
		}
	}
	return nil
}

// drain stops every run: interrupt first, cancel after the grace period.
func (w *Worker) drain(wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	w.each(func(r *run) { r.cancel(engine.ErrInterrupted) })
	select {
	case <-done:
		return
	case <-time.After(w.cfg.ShutdownGrace):
	}
	w.each(func(r *run) { r.cancel(errShutdown) })
	select {
	case <-done:
	case <-time.After(w.cfg.ShutdownGrace):
		w.log.Error("runs still going after shutdown grace", "runs", w.count())
	}
}

func (w *Worker) each(f func(*run)) {
	w.mu.Lock()
	rs := make([]*run, 0, len(w.runs))
	for _, r := range w.runs {
		rs = append(rs, r)
	}
	w.mu.Unlock()
	for _, r := range rs {
		f(r)
	}
}

func (w *Worker) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.runs)
}

// Serve runs the worker as its own process, configured from the environment
// (CLOPEN_WORKER_CAPACITY, CLOPEN_WORKSPACES, CLOPEN_SCENARIOS), offering
// the installed engines that are ready (CLOPEN_DATA, CLOPEN_ENGINES_DIR,
// credentials and CLOPEN_LLM_BASE_URL; see package engines).
func Serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	p, closeAll, err := servekit.Start(ctx, getenv, stderr, servekit.Options{Name: Name})
	if err != nil {
		return err
	}
	defer closeAll()
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return err
	}
	setup := engines.SetupFromEnv(engines.DefaultDataDir(getenv), getenv, p.Logger)
	if setup.Sandbox, err = engines.Sandboxing(ctx, getenv, filepath.Join(setup.DataDir, "run"), p.Logger); err != nil {
		if !errors.Is(err, engines.ErrNoSandbox) {
			return err
		}
		setup.NoSandbox = err // only the scripted engine: agents never run unconfined unasked
	}
	// A second connection for the control plane (see Deps.Control).
	url := getenv(servekit.EnvNATSURL)
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	control, err := natsx.Connect(url, "clopen-engine-worker-control", p.Logger, busauth.FromEnv(busauth.Role(Name), getenv)...)
	if err != nil {
		return err
	}
	defer control.Close()
	setup.Accounts = ArtifactAccounts(p.NATS)
	offered, versions, pending := engines.Offer(ctx, setup)
	w, err := New(cfg, Deps{NATS: p.NATS, Control: control, Logger: p.Logger, Health: p.Health, Engines: offered, Versions: versions,
		Later: pending.Watch, Proxies: setup.ModelProxies(), MCP: setup.MCPProxy()})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

// SandboxInit runs the agent sandbox's init when this binary was started as
// it (inside a sandbox) and never returns then; otherwise it returns at
// once. Every binary that runs a worker calls it first thing in main.
func SandboxInit() { sandbox.Main() }
