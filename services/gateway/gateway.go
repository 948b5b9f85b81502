// Package gateway is Clopen's only public entry: REST and WebSocket,
// authentication, tenancy and rate limits. It is stateless; any replica
// serves any client.
package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/servepg"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/services/gateway/internal/artifacts"
	"clopen.dev/services/gateway/internal/auth"
	"clopen.dev/services/gateway/internal/chats"
	"clopen.dev/services/gateway/internal/engines"
	"clopen.dev/services/gateway/internal/httpapi"
	"clopen.dev/services/gateway/internal/identity"
	"clopen.dev/services/gateway/internal/live"
	"clopen.dev/services/gateway/internal/webui"
)

// Name is the service name on the bus and in logs.
const Name = "gateway"

// Config tunes the gateway. Zero values take DefaultConfig's.
type Config struct {
	Addr string // HTTP listen address

	MaxBodyBytes   int64 // REST request bodies; larger is 413 too_large
	MaxPromptBytes int   // the text of one prompt (REST or WebSocket); larger is 413 too_large
	MaxFileBytes   int64 // one file read from a session's workspace; larger is 413 too_large
	// MaxArchiveBytes bounds an uploaded project archive
	// (CLOPEN_MAX_ARCHIVE_BYTES); larger is 413 too_large.
	MaxArchiveBytes int64
	RateLimit       float64 // requests (and WebSocket frames) per second per API key
	RateBurst       int     // requests a key may make at once

	WSReadLimit    int64         // largest WebSocket client frame
	WSQueueSize    int           // outbound frames queued per connection before it is a slow consumer
	WSSlowGrace    time.Duration // how long a full queue may stay full
	WSWriteTimeout time.Duration // bound on writing one frame
	WSPingInterval time.Duration // keepalive
	// WSOrigins lists browser origins, besides the gateway's own host, that
	// may open a WebSocket (host patterns, as websocket.AcceptOptions).
	WSOrigins []string
	// WSMaxPerKey and WSMaxPerTenant cap the WebSockets open at once with
	// one API key and in one tenant (CLOPEN_WS_MAX_PER_KEY,
	// CLOPEN_WS_MAX_PER_TENANT); one more is refused with 429.
	WSMaxPerKey, WSMaxPerTenant int

	ShutdownGrace time.Duration // how long clients get to leave after bye

	// HTTP timeouts: reading a request (headers and body), writing its
	// answer (longer than the slowest route, a structured generation), and
	// an idle keep-alive connection. A WebSocket is exempt once upgraded;
	// its pings and WSWriteTimeout bound it instead.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration

	// StartTimeout bounds one attempt to start a turn in streammgr; a send
	// tries twice before it answers 504 (zero: the bus's default).
	StartTimeout time.Duration

	// Tokens hold the caller tokens' signing key (TokenKeys): the gateway
	// signs one for its principal into every service call, and does not
	// start without it.
	Tokens bustoken.Keys

	// Replicas is the replication of the snapshots object store, should
	// the gateway be the first to need it (CLOPEN_STREAM_REPLICAS; 0 is 1).
	Replicas int

	// DevKeyFile, set by clopen dev, is the development key's file: the web
	// app on this machine signs in with it without asking (POST
	// /v1/session/dev). Empty everywhere else.
	DevKeyFile string
}

// TokenKeys are the bus token keys the gateway needs: it signs the caller
// tokens.
var TokenKeys = bustoken.Need{CallerKey: true}

// DefaultConfig returns the configuration `clopen dev` uses.
func DefaultConfig() Config {
	h, w := httpapi.DefaultConfig(), live.DefaultConfig()
	a := auth.DefaultConfig()
	return Config{
		Addr:         "127.0.0.1:8420",
		MaxBodyBytes: h.MaxBodyBytes, MaxPromptBytes: h.MaxPromptBytes, MaxArchiveBytes: h.MaxArchiveBytes,
		MaxFileBytes: h.MaxFileBytes,
		RateLimit:    a.Rate, RateBurst: a.Burst,
		WSReadLimit: w.ReadLimit, WSQueueSize: w.QueueSize, WSSlowGrace: w.SlowGrace,
		WSWriteTimeout: w.WriteTimeout, WSPingInterval: w.PingInterval,
		WSMaxPerKey: w.MaxPerKey, WSMaxPerTenant: w.MaxPerTenant,
		ShutdownGrace: 2 * time.Second,
		ReadTimeout:   time.Minute, WriteTimeout: 5 * time.Minute, IdleTimeout: 2 * time.Minute,
	}
}

// Deps are the connections the gateway runs on; the caller owns them.
type Deps struct {
	NATS   *nats.Conn
	DB     *pgxpool.Pool
	Logger *slog.Logger
	Health *health.Registry
	// Listener, when set, is served instead of listening on Config.Addr
	// (tests and `clopen dev` pass one to learn the port before Run starts).
	Listener net.Listener
	// Ready, when set, is called with the base URL once the gateway serves.
	Ready func(url string)
}

// Run serves HTTP until ctx ends, then says bye to WebSocket clients and
// shuts down gracefully.
func Run(ctx context.Context, cfg Config, d Deps) error {
	if err := cfg.Tokens.Check(TokenKeys); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	signer, err := cfg.Tokens.CallerSigner()
	if err != nil {
		return err
	}
	ln := d.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return fmt.Errorf("listen %s: %w", cfg.Addr, err)
		}
	}
	store := identity.New(d.DB)
	authn := auth.New(store, auth.Config{Rate: cfg.RateLimit, Burst: cfg.RateBurst}, d.Logger)
	bus := identity.NewBus(d.NATS, signer)
	ch := chats.New(bus, store, chats.Config{StartTimeout: cfg.StartTimeout})
	arts := artifacts.New(bus, store)
	eng := engines.New(d.NATS, bus, store)
	snaps, err := snapshotStore(d.NATS, cfg.Replicas)
	if err != nil {
		return err
	}
	hub, err := live.New(live.Config{
		ReadLimit: cfg.WSReadLimit, QueueSize: cfg.WSQueueSize, SlowGrace: cfg.WSSlowGrace, WriteTimeout: cfg.WSWriteTimeout,
		PingInterval: cfg.WSPingInterval, MaxPromptBytes: cfg.MaxPromptBytes, OriginPatterns: cfg.WSOrigins,
		MaxPerKey: cfg.WSMaxPerKey, MaxPerTenant: cfg.WSMaxPerTenant,
	}, live.Deps{NATS: d.NATS, Chats: ch, Artifacts: arts, Engines: eng, Projects: store, Limiter: authn, Logger: d.Logger})
	if err != nil {
		return fmt.Errorf("websocket hub: %w", err)
	}
	ui, err := webui.New()
	if err != nil {
		hub.Close(0)
		return err
	}
	rest := httpapi.New(httpapi.Config{MaxBodyBytes: cfg.MaxBodyBytes, MaxPromptBytes: cfg.MaxPromptBytes,
		MaxArchiveBytes: cfg.MaxArchiveBytes, MaxFileBytes: cfg.MaxFileBytes, DevKeyFile: cfg.DevKeyFile}, httpapi.Deps{
		Store: store, Auth: authn, Chats: ch, Artifacts: arts, Live: hub, Health: d.Health.Handler(), Logger: d.Logger,
		Engines: eng, Snapshots: snaps, UI: ui,
	})
	stats, err := observeHub(hub)
	if err != nil {
		hub.Close(0)
		return err
	}
	defer func() { _ = stats.Unregister() }()
	def := DefaultConfig()
	srv := &http.Server{Handler: instrument(rest.Handler()), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: cmp.Or(cfg.ReadTimeout, def.ReadTimeout), WriteTimeout: cmp.Or(cfg.WriteTimeout, def.WriteTimeout),
		IdleTimeout: cmp.Or(cfg.IdleTimeout, def.IdleTimeout)}
	d.Health.Add(Name, func(ctx context.Context) error { return d.DB.Ping(ctx) })
	defer d.Health.Remove(Name)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	d.Logger.InfoContext(ctx, "gateway listening", "url", url)
	if d.Ready != nil {
		d.Ready(url)
	}
	select {
	case err := <-errc:
		hub.Close(0)
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	grace := cfg.ShutdownGrace
	if grace <= 0 {
		grace = DefaultConfig().ShutdownGrace
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+3*time.Second)
	defer cancel()
	// Shutdown stops new requests; WebSockets are hijacked, so the hub ends them.
	err = srv.Shutdown(sctx)
	hub.Close(grace)
	<-errc
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// Serve runs the gateway as its own process, configured from the
// environment: CLOPEN_HTTP_ADDR (listen address), CLOPEN_RATE_LIMIT and
// CLOPEN_RATE_BURST (per-key budget), CLOPEN_WS_ORIGINS (comma-separated
// browser origins allowed to open a WebSocket), CLOPEN_WS_MAX_PER_KEY and
// CLOPEN_WS_MAX_PER_TENANT (open WebSockets at once), CLOPEN_MAX_ARCHIVE_BYTES
// (the largest project archive upload).
func Serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	cfg, err := configFromEnv(getenv)
	if err != nil {
		return err
	}
	p, closeAll, err := servepg.Start(ctx, getenv, stderr, servepg.Options{Name: Name, Schema: Schema})
	if err != nil {
		return err
	}
	defer closeAll()
	return Run(ctx, cfg, Deps{NATS: p.NATS, DB: p.DB, Logger: p.Logger, Health: p.Health})
}

func configFromEnv(getenv func(string) string) (Config, error) {
	cfg := DefaultConfig()
	if a := getenv("CLOPEN_HTTP_ADDR"); a != "" {
		cfg.Addr = a
	}
	if v := getenv("CLOPEN_RATE_LIMIT"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return cfg, fmt.Errorf("CLOPEN_RATE_LIMIT: want a positive number, not %q", v)
		}
		cfg.RateLimit = f
	}
	if v := getenv("CLOPEN_RATE_BURST"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return cfg, fmt.Errorf("CLOPEN_RATE_BURST: want a positive integer, not %q", v)
		}
		cfg.RateBurst = n
	}
	for name, dst := range map[string]*int{"CLOPEN_WS_MAX_PER_KEY": &cfg.WSMaxPerKey, "CLOPEN_WS_MAX_PER_TENANT": &cfg.WSMaxPerTenant} {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return cfg, fmt.Errorf("%s: want a positive integer, not %q", name, v)
			}
			*dst = n
		}
	}
	if v := getenv("CLOPEN_MAX_ARCHIVE_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return cfg, fmt.Errorf("CLOPEN_MAX_ARCHIVE_BYTES: want a positive number of bytes, not %q", v)
		}
		cfg.MaxArchiveBytes = n
	}
	keys, err := bustoken.FromEnv(getenv)
	if err != nil {
		return cfg, err
	}
	cfg.Tokens = keys.Only(TokenKeys)
	if v := getenv("CLOPEN_STREAM_REPLICAS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5 {
			return cfg, fmt.Errorf("CLOPEN_STREAM_REPLICAS=%q: want 1 to 5", v)
		}
		cfg.Replicas = n
	}
	if v := getenv("CLOPEN_WS_ORIGINS"); v != "" {
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				cfg.WSOrigins = append(cfg.WSOrigins, o)
			}
		}
	}
	return cfg, nil
}

// snapshotStore is the sessions' snapshot store, bound on first use: the
// gateway reads sessions' files for their users and writes projects' bases,
// and must not fail to start because no worker has made the bucket yet.
func snapshotStore(nc *nats.Conn, replicas int) (snapshot.Store, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return snapshot.Lazy(func(ctx context.Context) (snapshot.Store, error) {
		return snapshot.ObjectStore(ctx, js, events.BucketSnapshots, replicas)
	}), nil
}
