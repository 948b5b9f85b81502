// Package servekit wires one service as its own process (`clopen serve <svc>`
// or cmd/<svc>): configuration from the environment, the NATS connection,
// telemetry, and the admin HTTP listener for health. It has no database: a
// service that owns a schema starts through servepg, which adds the pool.
package servekit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natsx"
	"clopen.dev/pkg/platform/telemetry"
)

// Environment variables every standalone service reads.
const (
	EnvNATSURL   = "CLOPEN_NATS_URL"   // default nats://127.0.0.1:4222; identity: busauth.EnvUser, busauth.EnvPassword
	EnvLogLevel  = "CLOPEN_LOG_LEVEL"  // debug | info | warn | error
	EnvAdminAddr = "CLOPEN_ADMIN_ADDR" // health and metrics endpoints; empty = none
)

// Process is what a standalone service gets from Start.
type Process struct {
	Logger *slog.Logger
	NATS   *nats.Conn
	Health *health.Registry
}

// Options says what the service needs.
type Options struct {
	Name string
}

// Start connects everything the service needs. The returned function closes
// it all and must be called when the service has stopped.
func Start(ctx context.Context, getenv func(string) string, stderr io.Writer, opts Options) (*Process, func(), error) {
	p := &Process{
		Logger: logging.New(stderr, getenv(EnvLogLevel)).With("service", opts.Name),
		Health: health.New(),
	}
	// Not ready until the service itself says so: it replaces this check
	// (one named for it) once it serves, so a probe does not send work to
	// a process whose connections are up but whose endpoints are not.
	p.Health.Add(opts.Name, func(context.Context) error { return errors.New("starting") })
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	url := getenv(EnvNATSURL)
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	if getenv(busauth.EnvPassword) == "" {
		p.Logger.Warn("connecting to NATS without an identity: on a server that enforces the bus's grants this fails, " +
			"on one that does not the bus is open to whoever reaches it (set " + busauth.EnvPassword + ")")
	}
	nc, err := natsx.Connect(url, "clopen-"+opts.Name, p.Logger, busauth.FromEnv(busauth.Role(opts.Name), getenv)...)
	if err != nil {
		return nil, nil, err
	}
	p.NATS = nc
	closers = append(closers, func() { _ = nc.Drain() })
	p.Health.Add("nats", func(context.Context) error {
		if !nc.IsConnected() {
			return errors.New("nats not connected")
		}
		return nil
	})

	tel, err := telemetry.Setup(ctx, "clopen-"+opts.Name, getenv)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, func() { _ = tel.Shutdown(context.Background()) })
	if addr := getenv(EnvAdminAddr); addr != "" {
		h := AdminHandler(p.Health, tel.Metrics)
		if getenv("CLOPEN_PPROF") == "1" {
			h = withProfiling(h)
		}
		stop, err := ServeAdmin(addr, h, p.Logger)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		closers = append(closers, stop)
	}
	return p, closeAll, nil
}

// AdminHandler serves health (/healthz, /readyz) and metrics (/metrics).
func AdminHandler(h *health.Registry, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/healthz", h.Handler())
	mux.Handle("/readyz", h.Handler())
	if metrics != nil {
		mux.Handle("/metrics", metrics)
	}
	return mux
}

// withProfiling adds Go's /debug/pprof endpoints to the admin listener; only
// when CLOPEN_PPROF=1, since profiles reveal internals.
func withProfiling(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// ServeAdmin serves h on addr until the returned function is called.
func ServeAdmin(addr string, h http.Handler, logger *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("admin listener", "err", err)
		}
	}()
	logger.Info("admin listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
