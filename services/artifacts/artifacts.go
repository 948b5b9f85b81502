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
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/egress"
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
	// MasterKey is CLOPEN_MASTER_KEY: 32 bytes as base64 or hex, or several
	// such keys separated by commas (during a rotation).
	MasterKey string
	// MasterKeyFile is CLOPEN_MASTER_KEY_FILE: a file holding the key(s)
	// like MasterKey, read again when the service meets a key it does not
	// hold, so a rotation needs no restart. At most one of the two is set.
	MasterKeyFile string
	// RequireKey refuses to start without a master key instead of keeping a
	// generated key in DataDir: replicas must share one key, and a key
	// that lives in one container's disk is lost with it. Set for the
	// standalone service; `clopen dev` keeps its key in its data dir.
	RequireKey bool
	// RealHome is the home whose engine dirs (~/.claude/skills...) detect
	// scans and adopt links from; empty disables adoption (hosted).
	RealHome string
	// Replicas of the bucket it declares.
	Replicas int
	// Egress is what a provider's apiUrl may name: public https endpoints,
	// and the hosts of CLOPEN_PROVIDER_ALLOW over http or on private
	// addresses.
	Egress egress.Policy
	// PublicURL is CLOPEN_PUBLIC_URL, the gateway's base URL as browsers
	// reach it: sign-ins to remote MCP servers name its
	// OAuthCallbackPath as their callback, and none starts without it.
	PublicURL string
	// Tokens are the public keys of the caller and the dispatch tokens
	// (TokenKeys): the service serves nobody without them.
	Tokens bustoken.Keys
}

// TokenKeys are the bus token keys artifacts needs: it verifies the
// gateway's caller tokens and streammgr's dispatch tokens.
var TokenKeys = bustoken.Need{CallerPubKey: true, DispatchPubKey: true}

// EnvProviderAllow lists, comma-separated, the hosts a provider's apiUrl
// may name over plain http or on a private, loopback or link-local address.
const EnvProviderAllow = egress.EnvAllow

// DefaultConfig returns the configuration `clopen dev` uses, less DataDir.
func DefaultConfig() Config { return Config{Replicas: 1} }

// ConfigFromEnv reads CLOPEN_DATA (default: a dir under the system temp
// dir), CLOPEN_MASTER_KEY, CLOPEN_ARTIFACTS_REAL_HOME, CLOPEN_PROVIDER_ALLOW
// and CLOPEN_PUBLIC_URL.
func ConfigFromEnv(getenv func(string) string) Config {
	cfg := DefaultConfig()
	cfg.DataDir = getenv("CLOPEN_DATA")
	if cfg.DataDir == "" {
		cfg.DataDir = filepath.Join(os.TempDir(), "clopen-data")
	}
	cfg.MasterKey = getenv(seal.EnvKey)
	cfg.MasterKeyFile = getenv(seal.EnvKeyFile)
	cfg.RequireKey = true
	cfg.RealHome = getenv("CLOPEN_ARTIFACTS_REAL_HOME")
	cfg.Egress.Allow = egress.ParseAllow(getenv(EnvProviderAllow))
	cfg.PublicURL = getenv(EnvPublicURL)
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
	if cfg.RequireKey && cfg.MasterKey == "" && cfg.MasterKeyFile == "" {
		return fmt.Errorf("artifacts: %s is not set: every artifacts replica needs the same master key, "+
			"32 random bytes as base64 (`openssl rand -base64 32`), from a secret (or %s naming a file that holds it)",
			seal.EnvKey, seal.EnvKeyFile)
	}
	if err := cfg.Tokens.Check(TokenKeys); err != nil {
		return fmt.Errorf("artifacts: %w", err)
	}
	keys, err := seal.OpenRing(cfg.keySource())
	if err != nil {
		return fmt.Errorf("artifacts master key: %w", err)
	}
	key, err := checkKey(ctx, d.DB, keys)
	if err != nil {
		return err
	}
	js, err := jetstream.New(d.NATS)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	kv, err := DeclareBuckets(ctx, js, cfg.Replicas)
	if err != nil {
		return err
	}
	a := &api{log: d.Logger, st: &store.Store{DB: d.DB, Keys: keys,
		Docs: &store.Docs{Root: filepath.Join(cfg.DataDir, "artifacts"), Adoptable: adoptable(cfg.RealHome)}},
		realHome: cfg.RealHome, egress: cfg.Egress}
	if a.oauth, err = newOAuth(cfg, key, a.st); err != nil {
		return fmt.Errorf("artifacts: %w", err)
	}
	a.redirect = strings.TrimSuffix(cfg.PublicURL, "/") + OAuthCallbackPath
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
	srv := svc.NewServer(ctx, d.NATS, s, cfg.Tokens.Verifier()) // stops the service when ctx ends
	defer srv.Stop()
	if err := a.endpoints(s, srv); err != nil {
		return err
	}
	d.Health.Add(Name, func(ctx context.Context) error { return d.DB.Ping(ctx) })
	defer d.Health.Remove(Name)
	d.Logger.InfoContext(ctx, Name+" ready", "key_fingerprint", key.Fingerprint())
	<-ctx.Done()
	return nil
}

func (cfg Config) keySource() seal.Source {
	return seal.Source{Env: cfg.MasterKey, File: cfg.MasterKeyFile, DataDir: cfg.DataDir}
}

// checkKey refuses to serve without the key the database says seals, or
// with stored credentials sealed by keys this replica does not hold: it
// could open none of them, and would seal new ones that the other replicas
// cannot open. It returns the sealing key, recording the keyring's first
// when the database names none yet.
func checkKey(ctx context.Context, db *pgxpool.Pool, keys *seal.Keyring) (*seal.Key, error) {
	held := keys.Fingerprints()
	others, err := (&store.Store{DB: db}).SealedWithOtherKeys(ctx, held...)
	if err != nil {
		return nil, err
	}
	if len(others) > 0 {
		var list []string
		for fp, n := range others {
			list = append(list, fmt.Sprintf("%d with key %s", n, fp))
		}
		slices.Sort(list)
		return nil, fmt.Errorf("artifacts: this replica's master key is %s, but stored credentials are sealed with another (%s): "+
			"every replica needs the same %s; after `clopen admin rotate-key`, give every replica the new one",
			strings.Join(held, ", "), strings.Join(list, ", "), seal.EnvKey)
	}
	if err := store.RecordMasterKey(ctx, db, keys.First().Fingerprint()); err != nil {
		return nil, fmt.Errorf("artifacts: record the master key: %w", err)
	}
	fp, err := store.MasterKey(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("artifacts: master key record: %w", err)
	}
	key, err := keys.Lookup(fp)
	if err != nil {
		return nil, fmt.Errorf("artifacts: new credentials are sealed with master key %s, which this replica does not hold (%s); "+
			"give every replica the same %s", fp, strings.Join(held, ", "), seal.EnvKey)
	}
	return key, nil
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
	cfg := ConfigFromEnv(getenv)
	if cfg.Tokens, err = bustoken.FromEnv(getenv); err != nil {
		return err
	}
	return Run(ctx, cfg, Deps{NATS: p.NATS, DB: p.DB, Logger: p.Logger, Health: p.Health})
}
