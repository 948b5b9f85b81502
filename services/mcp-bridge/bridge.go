// Package bridge is the mcp-bridge service: the MCP Streamable HTTP
// endpoint through which agents reach Clopen's own tools, each call bound
// to the run that made it by a token the run's worker signed.
//
// A request without a valid mcp token (bustoken.MCP) of a run a worker
// still holds is refused with 401 and a JSON-RPC error; there is no
// fallback of any kind. The bridge keeps no state of its own between
// requests (the MCP server is stateless), so any replica serves any run;
// a tenant's stdio MCP servers run, sandboxed, on the replica a call
// reaches, with their own dirs under Config.StdioDir.
package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/egress"
	"clopen.dev/pkg/platform/egressproxy"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/servepg"
	"clopen.dev/services/mcp-bridge/internal/binding"
	"clopen.dev/services/mcp-bridge/internal/confine"
	"clopen.dev/services/mcp-bridge/internal/ext"
)

// Name is the service name on the bus and in logs.
const Name = "mcp-bridge"

// EnvAddr is the variable of the MCP endpoint's listen address.
const EnvAddr = "CLOPEN_MCP_ADDR"

// DefaultAddr is where a standalone bridge listens unless EnvAddr says.
const DefaultAddr = "127.0.0.1:8430"

// TokenKeys are the bus token keys the bridge needs: the public keys of
// the mcp tokens workers sign, of the runs' dispatch tokens the workers
// forward beside them (for external servers), and of the caller tokens of
// the gateway's probes.
var TokenKeys = bustoken.Need{MCPPubKey: true, DispatchPubKey: true, CallerPubKey: true}

// Config tunes the service.
type Config struct {
	// Addr is the MCP endpoint's listen address, unless Deps.Listener is set.
	Addr string
	// Tokens verify the agents' mcp tokens.
	Tokens bustoken.Keys
	// AskTimeout is how long ask_user waits for the worker's reply: the
	// bus's window for it (the worker gives up on the user a little
	// earlier and says so).
	AskTimeout time.Duration
	// AllowHosts are the hosts of remote MCP servers that may be reached
	// on addresses that are not public (egress.EnvAllow, as for providers).
	AllowHosts []string
	// StdioDir holds the tenants' stdio MCP servers' HOME and working dirs,
	// one pair per tenant and server; empty refuses stdio servers. They run
	// in the agents' sandbox (internal/confine), checked at the first
	// launch: the bridge must run as root with bubblewrap installed then.
	StdioDir string
	// StdioReadOnly are dirs the stdio servers see read-only besides the
	// system's: where the operator installed the servers tenants may run.
	StdioReadOnly []string
	// StdioAllow are the destinations stdio servers may reach over HTTP(S)
	// through the bridge's egress proxy (egressproxy.EnvAllowMCPStdio),
	// at public addresses only; none leaves them loopback only.
	StdioAllow []egressproxy.Rule
	// IdleTimeout stops a stdio server no call has used that long, and
	// closes a run's connection to a server it has not used that long; 0 is
	// 10 minutes.
	IdleTimeout time.Duration
}

// The variables of the stdio servers' configuration.
const (
	// EnvStdioDir is Config.StdioDir; "off" refuses stdio servers.
	EnvStdioDir = "CLOPEN_MCP_STDIO_DIR"
	// EnvStdioReadOnly is Config.StdioReadOnly, comma-separated.
	EnvStdioReadOnly = "CLOPEN_MCP_STDIO_MOUNTS"
	// EnvIdle is Config.IdleTimeout, a Go duration.
	EnvIdle = "CLOPEN_MCP_IDLE"
)

// DefaultConfig returns the configuration `clopen dev` uses.
func DefaultConfig() Config {
	return Config{Addr: DefaultAddr, AskTimeout: busauth.ResponseWindow,
		StdioDir: filepath.Join(os.TempDir(), "clopen-mcp-stdio")}
}

// Deps are the connections the service runs on; the caller owns them.
type Deps struct {
	NATS   *nats.Conn
	DB     *pgxpool.Pool
	Logger *slog.Logger
	Health *health.Registry
	// Listener, when set, serves the MCP endpoint instead of Config.Addr.
	Listener net.Listener
}

// Run serves until ctx ends.
func Run(ctx context.Context, cfg Config, d Deps) error {
	if err := cfg.Tokens.Check(TokenKeys); err != nil {
		return err
	}
	if cfg.AskTimeout <= 0 {
		cfg.AskTimeout = DefaultConfig().AskTimeout
	}
	js, err := jetstream.New(d.NATS)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	owners := &lazyBucket{js: js, name: events.BucketRunOwner}
	svc, err := micro.AddService(d.NATS, micro.Config{Name: "mcpbridge", Version: "0.1.0", Description: "MCP Streamable HTTP bridge for agents"})
	if err != nil {
		return fmt.Errorf("add micro service: %w", err)
	}
	defer func() { _ = svc.Stop() }()
	ln := d.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return fmt.Errorf("mcp listener: %w", err)
		}
	}
	verifier := cfg.Tokens.Verifier()
	extOpts := ext.Options{Logger: d.Logger, AllowHosts: cfg.AllowHosts, IdleTimeout: cfg.IdleTimeout}
	if cfg.StdioDir != "" {
		l := &confine.Launcher{Dir: cfg.StdioDir, ReadOnly: cfg.StdioReadOnly}
		if len(cfg.StdioAllow) > 0 {
			stop, err := l.ServeEgress(&egressproxy.Proxy{Allow: cfg.StdioAllow, Logger: d.Logger})
			if err != nil {
				return err
			}
			defer stop()
			d.Logger.InfoContext(ctx, "stdio MCP servers may reach the operator's allowed destinations", "allow", cfg.StdioAllow)
		}
		extOpts.Launch = l.Launch
	}
	stopProbe, err := serveProbe(ctx, d.NATS, svc, verifier, extOpts, func(err error) { d.Logger.Error("mcp probe", "err", err) })
	if err != nil {
		return err
	}
	defer stopProbe()
	external := ext.New(ext.Bus{NC: d.NATS}, extOpts)
	defer func() { _ = external.Close() }()
	t := &tools{db: d.DB, nc: d.NATS, askTimeout: cfg.AskTimeout}
	srv := &http.Server{Handler: handler(verifier, owners, t, external), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	d.Health.Add(Name, func(ctx context.Context) error { return d.DB.Ping(ctx) })
	defer d.Health.Remove(Name)
	d.Logger.InfoContext(ctx, Name+" ready", "mcp", "http://"+ln.Addr().String()+"/mcp")
	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("mcp endpoint: %w", err)
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	return nil
}

// handler is the bridge's HTTP API: /mcp serves Clopen's own tools,
// /mcp/ext/<slug> the run's external servers (which also need the run's
// dispatch token); both only to a request with a valid token of a live run.
func handler(verifier *bustoken.Verifier, owners runs, t *tools, external http.Handler) http.Handler {
	internal := map[string]*mcp.Server{} // by the name of ask_user
	for _, e := range events.EngineTypes() {
		name := events.MCPAskToolName(e)
		if internal[name] == nil {
			internal[name] = t.server(name)
		}
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		run, _ := binding.From(r.Context())
		return internal[events.MCPAskToolName(events.EngineType(run.Engine))]
	},
		&mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: 1 << 20})
	mux := http.NewServeMux()
	mux.Handle("/mcp", authenticate(verifier, owners, mcpHandler))
	mux.Handle(ext.Pattern, authenticate(verifier, owners, withDispatch(verifier, external)))
	return mux
}

// lazyBucket is a key-value bucket another service declares (the
// workers declare run_owner), looked up at its first use: until it
// exists, no run is live.
type lazyBucket struct {
	js   jetstream.JetStream
	name string
	mu   sync.Mutex
	kv   jetstream.KeyValue
}

// Get implements runs.
func (b *lazyBucket) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	b.mu.Lock()
	kv := b.kv
	b.mu.Unlock()
	if kv == nil {
		var err error
		if kv, err = b.js.KeyValue(ctx, b.name); errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, jetstream.ErrKeyNotFound
		} else if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", b.name, err)
		}
		b.mu.Lock()
		b.kv = kv
		b.mu.Unlock()
	}
	return kv.Get(ctx, key)
}

// StdioFromEnv reads the stdio servers' variables (EnvStdioDir,
// EnvStdioReadOnly, egressproxy.EnvAllowMCPStdio, EnvIdle) into c; an
// unset one leaves its field be.
func (c *Config) StdioFromEnv(getenv func(string) string) error {
	switch dir := getenv(EnvStdioDir); dir {
	case "":
	case "off":
		c.StdioDir = ""
	default:
		c.StdioDir = dir
	}
	for _, d := range strings.Split(getenv(EnvStdioReadOnly), ",") {
		if d = strings.TrimSpace(d); d != "" {
			if !filepath.IsAbs(d) {
				return fmt.Errorf("%s: %q is not an absolute path", EnvStdioReadOnly, d)
			}
			c.StdioReadOnly = append(c.StdioReadOnly, d)
		}
	}
	if v := getenv(egressproxy.EnvAllowMCPStdio); v != "" {
		rules, err := egressproxy.ParseAllow(egressproxy.EnvAllowMCPStdio, v)
		if err != nil {
			return err
		}
		c.StdioAllow = rules
	}
	if v := getenv(EnvIdle); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s=%q: want a positive duration such as 10m", EnvIdle, v)
		}
		c.IdleTimeout = d
	}
	return nil
}

// Serve runs the service as its own process, configured from the environment.
func Serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	cfg := DefaultConfig()
	if a := getenv(EnvAddr); a != "" {
		cfg.Addr = a
	}
	keys, err := bustoken.FromEnv(getenv)
	if err != nil {
		return err
	}
	cfg.Tokens = keys.Only(TokenKeys)
	cfg.AllowHosts = egress.ParseAllow(getenv(egress.EnvAllow))
	if err := cfg.StdioFromEnv(getenv); err != nil {
		return err
	}
	if err := cfg.Tokens.Check(TokenKeys); err != nil {
		return err
	}
	p, closeAll, err := servepg.Start(ctx, getenv, stderr, servepg.Options{Name: Name, Schema: Schema})
	if err != nil {
		return err
	}
	defer closeAll()
	return Run(ctx, cfg, Deps{NATS: p.NATS, DB: p.DB, Logger: p.Logger, Health: p.Health})
}
