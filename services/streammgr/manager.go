package streammgr

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
)

// Manager is a running streammgr: the request handlers, the EVENTS pipeline
// and the reaper share it.
type Manager struct {
	cfg Config
	db  *pgxpool.Pool
	nc  *nats.Conn
	js  jetstream.JetStream
	log *slog.Logger
	bus
	pipe *pipeline
	disp *dispatcher
	// watch stops a tenant's running turns once a budget is spent.
	watch *budgetWatch

	flags jetstream.KeyValue // run_ctl

	mu        sync.Mutex
	owners    jetstream.KeyValue // run_owner, watched by the reaper; nil until a worker declared it
	workers   jetstream.KeyValue // worker heartbeats; nil until a worker declared it
	offered   map[events.EngineType]bool
	offeredAt time.Time
}

func (m *Manager) setBuckets(owners, workers jetstream.KeyValue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owners, m.workers = owners, workers
}

func (m *Manager) workerBucket() jetstream.KeyValue {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workers
}

// internal logs an unexpected error of a request handler once.
func (m *Manager) internal(err error) { m.log.Error("request failed", "err", err) }

// background is the context of work a request starts but must finish even if
// the caller goes away (publishing a job after its run was committed).
func background(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
