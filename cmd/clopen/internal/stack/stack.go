// Package stack runs every Clopen service in one process on an embedded NATS
// server: `clopen dev`, the end-to-end tests and the benchmark all start the
// system through it, so they exercise the same wiring.
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/embeddednats"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/natsx"
	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/services/artifacts"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/gateway"
	bridge "clopen.dev/services/mcp-bridge"
	"clopen.dev/services/streammgr"
)

// Schemas lists every service's schema in the order migrations apply them.
var Schemas = []pgdb.Schema{gateway.Schema, streammgr.Schema, artifacts.Schema, bridge.Schema}

// Config says what to start.
type Config struct {
	// Dir holds the JetStream store (Dir/nats).
	Dir string
	// NATSPort for the embedded server; 0 picks a free one, -1 too.
	NATSPort int
	// NATSURL, when set, uses that server instead of starting one.
	NATSURL string
	// Bus holds each service's password on the NATSURL server; nil
	// connects without identities (a server that enforces none). The
	// embedded server always gets fresh ones.
	Bus busauth.Passwords
	// Keys are the bus token keys; nil makes fresh ones. Each service is
	// given only the ones it needs (its TokenKeys).
	Keys *bustoken.Keys
	// DatabaseURL is required: the stack does not start Postgres.
	DatabaseURL string
	// HTTP is the gateway's listener; nil listens on a free loopback port.
	HTTP net.Listener
	// Workers is how many engine workers to run in-process (default 1; 0
	// with NoWorkers for tests that run workers elsewhere).
	Workers   int
	NoWorkers bool
	Worker    worker.Config
	// Engines, when set, makes the workers offer the installed agent
	// engines that are ready; the scripted engine is always offered.
	Engines   *engines.Setup
	Streammgr streammgr.Config
	// NoStreammgr leaves streammgr out (tests that run and restart their own).
	NoStreammgr bool
	Gateway     *gateway.Config // nil: gateway.DefaultConfig()
	// Bridge configures the MCP bridge (nil: bridge.DefaultConfig()); its
	// stdio servers' dirs go under Dir unless it names its own.
	Bridge *bridge.Config
	// Artifacts configures the artifacts service; an empty DataDir means Dir.
	Artifacts artifacts.Config
	Logger    *slog.Logger
	// OnReady is called with the gateway URL once it serves.
	OnReady func(url string)
}

// Stack is a running system.
type Stack struct {
	NATS    *server.Server // nil when Config.NATSURL was given
	NATSURL string
	// Bus is each role's password on the bus (busauth), the Operator's
	// included, for tests and tools that inspect it.
	Bus busauth.Passwords
	// Keys are the bus token keys, for tests that sign requests as the
	// gateway or streammgr would.
	Keys   bustoken.Keys
	URL    string // the gateway's base URL
	MCPURL string // the MCP bridge's base URL
	DB     *pgxpool.Pool
	Health *health.Registry

	names     []string // the health check every started service registers
	natsDir   string
	natsPort  int
	users     []*server.User
	cancel    context.CancelFunc
	done      chan struct{}
	err       error
	conns     []*nats.Conn
	poolStats metric.Registration // the shared pool's statistics
	mu        sync.Mutex
}

// Start migrates the database and starts every service. Stop (or ctx
// ending) stops them.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	if cfg.DatabaseURL == "" {
		return nil, errors.New("stack: DatabaseURL is required")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Stack{Health: health.New(), done: make(chan struct{})}
	natsURL := cfg.NATSURL
	s.Bus = cfg.Bus
	if natsURL == "" {
		port := cfg.NATSPort
		if port == 0 {
			port = -1
		}
		s.natsDir = filepath.Join(cfg.Dir, "nats")
		s.Bus = busauth.NewPasswords()
		users, err := busauth.Users(s.Bus)
		if err != nil {
			return nil, err
		}
		s.users = users
		ns, err := embeddednats.Start(embeddednats.Config{StoreDir: s.natsDir, Port: port, Users: users})
		if err != nil {
			return nil, err
		}
		s.NATS, natsURL = ns, ns.ClientURL()
		s.natsPort = ns.Addr().(*net.TCPAddr).Port
	}
	s.NATSURL = natsURL
	if cfg.Keys != nil {
		s.Keys = *cfg.Keys
	} else {
		s.Keys = bustoken.Generate()
	}
	fail := func(err error) (*Stack, error) {
		s.shutdown()
		return nil, err
	}
	pool, err := pgdb.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fail(err)
	}
	s.DB = pool
	if s.poolStats, err = pgdb.ObservePool(pool, "clopen"); err != nil {
		return fail(err)
	}
	for _, sc := range Schemas {
		if _, err := pgdb.Migrate(ctx, pool, sc, nil); err != nil {
			return fail(err)
		}
	}
	ln := cfg.HTTP
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return fail(err)
		}
	}
	s.URL = "http://" + ln.Addr().String()
	// The MCP bridge's endpoint, which every worker gives its runs' agents.
	mcpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	s.MCPURL = "http://" + mcpLn.Addr().String()

	type service struct {
		name string
		run  func(context.Context, *nats.Conn, *slog.Logger) error
	}
	connect := func(role busauth.Role, name string) (*nats.Conn, error) {
		return natsx.Connect(natsURL, name, logger, busauth.Options(role, s.Bus[role])...)
	}
	services := []service{
		{artifacts.Name, func(ctx context.Context, nc *nats.Conn, l *slog.Logger) error {
			ac := cfg.Artifacts
			if ac.DataDir == "" {
				ac.DataDir = cfg.Dir
			}
			ac.Replicas = max(ac.Replicas, 1)
			ac.Tokens = s.Keys.Only(artifacts.TokenKeys)
			return artifacts.Run(ctx, ac, artifacts.Deps{NATS: nc, DB: pool, Logger: l, Health: s.Health})
		}},
		{bridge.Name, func(ctx context.Context, nc *nats.Conn, l *slog.Logger) error {
			bc := bridge.DefaultConfig()
			if cfg.Bridge != nil {
				bc = *cfg.Bridge
			}
			if bc.StdioDir == bridge.DefaultConfig().StdioDir && cfg.Dir != "" {
				bc.StdioDir = filepath.Join(cfg.Dir, "mcp-stdio")
			}
			bc.Tokens = s.Keys.Only(bridge.TokenKeys)
			// Remote MCP servers may be where providers may: the one allow-list.
			bc.AllowHosts = cfg.Artifacts.Egress.Allow
			return bridge.Run(ctx, bc, bridge.Deps{NATS: nc, DB: pool, Logger: l, Health: s.Health, Listener: mcpLn})
		}},
		{gateway.Name, func(ctx context.Context, nc *nats.Conn, l *slog.Logger) error {
			gc := gateway.DefaultConfig()
			if cfg.Gateway != nil {
				gc = *cfg.Gateway
			}
			gc.Tokens = s.Keys.Only(gateway.TokenKeys)
			return gateway.Run(ctx, gc, gateway.Deps{NATS: nc, DB: pool, Logger: l,
				Health: s.Health, Listener: ln, Ready: cfg.OnReady})
		}},
	}
	if cfg.NoStreammgr {
		// Whoever runs streammgr later owns these; declared here so the
		// workers, which wait for them, can start now.
		nc, err := connect(busauth.Streammgr, "clopen-stack")
		if err != nil {
			return fail(err)
		}
		js, _ := jetstream.New(nc)
		err = streammgr.DeclareStreams(ctx, js, orDefault(cfg.Streammgr, streammgr.DefaultConfig()).Streams)
		nc.Close()
		if err != nil {
			return fail(err)
		}
	} else {
		services = append(services, service{streammgr.Name, func(ctx context.Context, nc *nats.Conn, l *slog.Logger) error {
			sc := orDefault(cfg.Streammgr, streammgr.DefaultConfig())
			sc.Tokens = s.Keys.Only(streammgr.TokenKeys)
			return streammgr.Run(ctx, sc, streammgr.Deps{NATS: nc, DB: pool, Logger: l, Health: s.Health})
		}})
	}
	workers := cfg.Workers
	if workers == 0 && !cfg.NoWorkers {
		workers = 1
	}
	var offered worker.Deps // the engines every worker offers, checked once
	var later *engines.Pending
	if cfg.Engines != nil && workers > 0 {
		// Engine processes get their tenant's account from artifacts.
		nc, err := connect(busauth.Worker, "clopen-engine-accounts")
		if err != nil {
			return fail(err)
		}
		s.conns = append(s.conns, nc)
		setup := *cfg.Engines
		setup.Accounts = worker.ArtifactAccounts(nc)
		offered.Engines, offered.Versions, later = engines.Offer(ctx, setup)
	}
	for i := range workers {
		wc := orDefault(cfg.Worker, worker.DefaultConfig())
		wc.Tokens = s.Keys.Only(worker.TokenKeys)
		if wc.MCPBridgeURL == "" {
			wc.MCPBridgeURL = s.MCPURL
		}
		if workers > 1 || wc.ID == "" {
			wc.ID = fmt.Sprintf("%s-%d", worker.DefaultConfig().ID, i)
		}
		if wc.Workspaces == worker.DefaultConfig().Workspaces && cfg.Dir != "" {
			wc.Workspaces = filepath.Join(cfg.Dir, "workspaces")
		}
		if wc.EngineConfig == "" && cfg.Dir != "" {
			wc.EngineConfig = filepath.Join(cfg.Dir, "engine-config")
		}
		if workers > 1 {
			// Each worker has a disk of its own, as on separate machines:
			// what one leaves there, another restores from the snapshot store.
			each := fmt.Sprintf("worker-%d", i)
			wc.Workspaces = filepath.Join(wc.Workspaces, each)
			if wc.EngineConfig != "" {
				wc.EngineConfig = filepath.Join(wc.EngineConfig, each)
			}
			if wc.SnapshotCache != "" {
				wc.SnapshotCache = filepath.Join(wc.SnapshotCache, each)
			}
		}
		services = append(services, service{worker.Name, func(ctx context.Context, nc *nats.Conn, l *slog.Logger) error {
			control, err := connect(busauth.Worker, "clopen-engine-worker-control")
			if err != nil {
				return err
			}
			defer control.Close()
			return worker.Run(ctx, wc, worker.Deps{NATS: nc, Control: control, Logger: l.With("worker_id", wc.ID),
				Health: s.Health, Engines: offered.Engines, Versions: offered.Versions, Later: later.Watch, Proxies: cfg.Engines.ModelProxies(),
				MCP: cfg.Engines.MCPProxy()})
		}})
	}

	for _, svc := range services {
		s.names = append(s.names, svc.name)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	errc := make(chan error, len(services))
	var wg sync.WaitGroup
	for _, svc := range services {
		nc, err := connect(busauth.Role(svc.name), "clopen-"+svc.name)
		if err != nil {
			cancel()
			return fail(err)
		}
		s.conns = append(s.conns, nc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.run(runCtx, nc, logger.With("service", svc.name)); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("%s: %w", svc.name, err)
				cancel() // one service failing stops the stack
			}
		}()
	}
	go func() {
		wg.Wait()
		close(errc)
		for err := range errc {
			s.err = errors.Join(s.err, err)
		}
		s.shutdown()
		close(s.done)
	}()
	context.AfterFunc(ctx, cancel)
	return s, nil
}

// Connect opens a client connection to the stack's bus as role (the
// caller closes it): the Operator for a test or tool that inspects
// everything, a service's role to see what that service may do.
func (s *Stack) Connect(role busauth.Role, name string, opts ...nats.Option) (*nats.Conn, error) {
	return nats.Connect(s.NATSURL, append(append([]nats.Option{nats.Name(name)}, busauth.Options(role, s.Bus[role])...), opts...)...)
}

// Ready waits until every service reports ready, or ctx ends.
func (s *Stack) Ready(ctx context.Context) error {
	for {
		ok, results := s.Health.Run(ctx)
		if ok && s.allReported(results) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stack not ready: %v", results)
		case <-s.done:
			return fmt.Errorf("stack stopped: %w", s.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *Stack) allReported(results []health.Result) bool {
	seen := map[string]bool{}
	for _, r := range results {
		seen[r.Name] = r.OK
	}
	for _, n := range s.names {
		if !seen[n] {
			return false
		}
	}
	return true
}

// RestartNATS stops the embedded NATS server, waits down, and starts it
// again on the same port and JetStream store: every service must reconnect
// and carry on (the fault tests).
func (s *Stack) RestartNATS(down time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.NATS == nil {
		return errors.New("stack: no embedded NATS server")
	}
	s.NATS.Shutdown()
	s.NATS.WaitForShutdown()
	time.Sleep(down)
	ns, err := embeddednats.Start(embeddednats.Config{StoreDir: s.natsDir, Port: s.natsPort, Users: s.users})
	if err != nil {
		return err
	}
	s.NATS = ns
	return nil
}

// Done is closed once every service has stopped.
func (s *Stack) Done() <-chan struct{} { return s.done }

// Err is why the stack stopped, after Done.
func (s *Stack) Err() error { return s.err }

// Stop stops every service and waits for them, then closes connections and
// the embedded server.
func (s *Stack) Stop() error {
	s.cancel()
	<-s.done
	return s.err
}

func (s *Stack) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
	if s.poolStats != nil {
		_ = s.poolStats.Unregister()
		s.poolStats = nil
	}
	if s.DB != nil {
		s.DB.Close()
		s.DB = nil
	}
	if s.NATS != nil {
		s.NATS.Shutdown()
		s.NATS.WaitForShutdown()
		s.NATS = nil
	}
}

func orDefault[T any](v, def T) T {
	if reflect.ValueOf(&v).Elem().IsZero() {
		return def
	}
	return v
}
