// Package artifacts is the artifacts service: the source of truth for
// skills, subagents, instructions, permission sets, profiles and engine
// accounts (credentials sealed at rest). It compiles the per-engine render
// plan workers apply at run start, expands /slash skills for streammgr, and
// publishes each tenant's artifact revision in the artifact_rev bucket.
//
// It serves svc.artifacts.<op> (see pkg/events/artifacts.go) and owns the
// artifacts schema and the documents under <DataDir>/artifacts/<tenant>/.
package artifacts

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/servepg"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/store"
)

// Name is the service name on the bus and in logs.
const Name = "artifacts"

// Config tunes the service.
type Config struct {
	// DataDir holds the documents (DataDir/artifacts/<tenant>/...) and, when
	// MasterKey is empty, the generated key file DataDir/secret.key.
	DataDir string
	// MasterKey is CLOPEN_MASTER_KEY: 32 bytes as base64 or hex.
	MasterKey string
	// RealHome is the home whose engine dirs (~/.claude/skills...) detect
	// scans and adopt links from; empty disables adoption (hosted).
	RealHome string
	// Replicas of the bucket it declares.
	Replicas int
}

// DefaultConfig returns the configuration `clopen dev` uses, less DataDir.
func DefaultConfig() Config { return Config{Replicas: 1} }

// ConfigFromEnv reads CLOPEN_DATA (default: a dir under the system temp
// dir), CLOPEN_MASTER_KEY and CLOPEN_ARTIFACTS_REAL_HOME.
func ConfigFromEnv(getenv func(string) string) Config {
	cfg := DefaultConfig()
	cfg.DataDir = getenv("CLOPEN_DATA")
	if cfg.DataDir == "" {
		cfg.DataDir = filepath.Join(os.TempDir(), "clopen-data")
	}
	cfg.MasterKey = getenv(seal.EnvKey)
	cfg.RealHome = getenv("CLOPEN_ARTIFACTS_REAL_HOME")
	return cfg
}

// Deps are the connections the service runs on; the caller owns them.
type Deps struct {
	NATS   *nats.Conn
	DB     *pgxpool.Pool
	Logger *slog.Logger
	Health *health.Registry
}

// Run serves until ctx ends.
func Run(ctx context.Context, cfg Config, d Deps) error {
	if cfg.DataDir == "" {
		return fmt.Errorf("artifacts: Config.DataDir is required")
	}
	key, err := seal.Load(cfg.MasterKey, cfg.DataDir)
	if err != nil {
		return fmt.Errorf("artifacts master key: %w", err)
	}
	js, err := jetstream.New(d.NATS)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	kv, err := DeclareBuckets(ctx, js, cfg.Replicas)
	if err != nil {
		return err
	}
	a := &api{log: d.Logger, st: &store.Store{DB: d.DB, Key: key,
		Docs: &store.Docs{Root: filepath.Join(cfg.DataDir, "artifacts"), Adoptable: adoptable(cfg.RealHome)}},
		realHome: cfg.RealHome}
	a.st.OnChange = func(ctx context.Context, tenant string, rev int64) { a.publish(ctx, kv, tenant, rev) }
	// A fresh bucket (a new NATS, a lost volume) learns every revision again.
	if revs, err := a.st.Revisions(ctx); err == nil {
		for t, r := range revs {
			a.publish(ctx, kv, t, r)
		}
	}
	s, err := micro.AddService(d.NATS, micro.Config{Name: Name, Version: "0.2.0",
		Description: "skills, subagents, instructions, permissions, profiles and engine accounts"})
	if err != nil {
		return fmt.Errorf("add micro service: %w", err)
	}
	srv := svc.NewServer(ctx)
	defer srv.Stop() // after the service stops taking requests
	defer func() { _ = s.Stop() }()
	if err := a.endpoints(s, srv); err != nil {
		return err
	}
	d.Health.Add(Name, func(ctx context.Context) error { return d.DB.Ping(ctx) })
	defer d.Health.Remove(Name)
	d.Logger.InfoContext(ctx, Name+" ready", "key_fingerprint", key.Fingerprint())
	<-ctx.Done()
	return nil
}

// publish puts a tenant's revision in the bucket; a failure is logged and
// healed by the next change or restart.
func (a *api) publish(ctx context.Context, kv jetstream.KeyValue, tenant string, rev int64) {
	if _, err := kv.Put(context.WithoutCancel(ctx), tenant, []byte(strconv.FormatInt(rev, 10))); err != nil {
		a.log.WarnContext(ctx, "publish artifact revision", "tenant", tenant, "revision", rev, "err", err)
	}
}

// Serve runs the service as its own process, configured from the environment.
func Serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	p, closeAll, err := servepg.Start(ctx, getenv, stderr, servepg.Options{Name: Name, Schema: Schema})
	if err != nil {
		return err
	}
	defer closeAll()
	return Run(ctx, ConfigFromEnv(getenv), Deps{NATS: p.NATS, DB: p.DB, Logger: p.Logger, Health: p.Health})
}
