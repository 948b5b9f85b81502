package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Catalog cache tuning.
const (
	// catalogTTL bounds how long a catalog is served from the cache when no
	// artifact change invalidates it first (a dynamic catalog may change
	// upstream).
	catalogTTL = 10 * time.Minute
	// catalogTimeout bounds one catalog read.
	catalogTimeout = 30 * time.Second
	// clampTimeout bounds the catalog read a run waits for before it starts:
	// past it the run starts with the requested effort.
	clampTimeout = 5 * time.Second
)

// catalogKey is whose catalog an entry is: models differ per account.
type catalogKey struct {
	tenant  string
	engine  events.EngineType
	account string
}

type catalogEntry struct {
	models []events.EngineModel
	at     time.Time
}

// catalogCache holds catalogs per (tenant, engine, account). A tenant's
// entries go when its artifact revision changes (accounts and providers are
// artifacts), and any entry after catalogTTL. Failures are never cached.
type catalogCache struct {
	mu      sync.Mutex
	entries map[catalogKey]catalogEntry
}

func (c *catalogCache) get(k catalogKey, now time.Time) ([]events.EngineModel, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || now.Sub(e.at) > catalogTTL {
		delete(c.entries, k)
		return nil, false
	}
	return e.models, true
}

func (c *catalogCache) put(k catalogKey, models []events.EngineModel, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[catalogKey]catalogEntry{}
	}
	c.entries[k] = catalogEntry{models: models, at: now}
}

// invalidate drops every entry of tenant.
func (c *catalogCache) invalidate(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k.tenant == tenant {
			delete(c.entries, k)
		}
	}
}

// errNoCatalog is returned by catalog for an engine that has none.
var errNoCatalog = engine.Errorf(events.KindModelUnavailable, "the engine has no model catalog")

// catalog returns the catalog of k, from the cache or read from the engine
// instance of (engine, tenant, account), every entry naming the account it
// was read with. A read that fails is counted, and the error returned for
// the caller to turn into an empty list: a stale copy is never served.
func (w *Worker) catalog(ctx context.Context, k catalogKey) ([]events.EngineModel, error) {
	if models, ok := w.catalogs.get(k, time.Now()); ok {
		return models, nil
	}
	eng, release, err := w.pool.Acquire(ctx, engine.Key{Engine: k.engine, Tenant: k.tenant, Account: k.account})
	if err != nil {
		return nil, w.catalogFailed(ctx, k, err)
	}
	defer release()
	cat, ok := eng.(engine.Cataloger)
	if !ok {
		return nil, errNoCatalog
	}
	dir, err := w.configDir(k.tenant, k.engine, k.account)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, catalogTimeout)
	defer cancel()
	models, err := cat.Models(ctx, engine.CatalogRequest{Tenant: k.tenant, AccountID: k.account, ConfigDir: dir})
	if err != nil {
		return nil, w.catalogFailed(ctx, k, err)
	}
	out := make([]events.EngineModel, 0, len(models))
	for _, m := range models {
		m.Engine = k.engine
		m.Account.ID = k.account
		out = append(out, m)
	}
	w.catalogs.put(k, out, time.Now())
	return out, nil
}

func (w *Worker) catalogFailed(ctx context.Context, k catalogKey, err error) error {
	catalogFailures.Add(context.WithoutCancel(ctx), 1, metric.WithAttributes(attribute.String("engine", string(k.engine))))
	w.log.WarnContext(ctx, "model catalog unavailable", "engine", k.engine, "tenant", k.tenant, "account", k.account, "err", err)
	return fmt.Errorf("read the %s catalog: %w", k.engine, err)
}

// byProvider keeps the models of provider ("" keeps all).
func byProvider(models []events.EngineModel, provider string) []events.EngineModel {
	out := []events.EngineModel{}
	for _, m := range models {
		if provider == "" || m.Provider == provider {
			out = append(out, m)
		}
	}
	return out
}

// clampEffort returns the effort a run starts with: its requested effort
// clamped to its model (the catalog's default model when the run names
// none). It reports nothing (nil) when the engine has no catalog or the
// catalog cannot be read, and the requested effort unchanged for a model the
// catalog does not list: the engine decides then. It also returns the
// model's list price, when the catalog knows it, which prices the run's
// metered usage while it runs.
func (w *Worker) clampEffort(ctx context.Context, job events.Job) (*string, *events.ModelCost) {
	ctx, cancel := context.WithTimeout(ctx, clampTimeout)
	defer cancel()
	models, err := w.catalog(ctx, catalogKey{tenant: job.Tenant, engine: job.Engine, account: job.AccountID})
	if err != nil || len(models) == 0 {
		return nil, nil
	}
	m := models[0]
	if job.Model != "" {
		var ok bool
		if m, ok = engine.FindModel(models, job.Model); !ok {
			effort := job.Effort
			return &effort, nil
		}
	}
	effort := engine.ClampEffort(m, job.Effort)
	return &effort, m.Cost
}
