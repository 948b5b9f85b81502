// Package live serves the WebSocket at /v1/ws (protocol: pkg/events/ws.go).
// A connection joins one chat session at a time and receives its chat events
// from one JetStream ordered consumer on CHAT: stored events after the
// client's cursor, then live ones, with no gap and no duplicate. A client
// without a cursor, or whose cursor has aged out of CHAT, first gets a
// snapshot from streammgr and continues after the snapshot's cursor. Project
// notifications arrive on core NATS and are forwarded without a cursor.
// Each connection's outbound queue is bounded; a client that stops reading
// is told bye with its last cursor and disconnected.
package live

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/chats"
	"clopen.dev/services/gateway/internal/identity"
)

// Config tunes the WebSocket.
type Config struct {
	// ReadLimit is the largest client frame served; a larger one is answered
	// with a too_large reply and skipped. Frames beyond 16 times it close
	// the connection.
	ReadLimit int64
	// QueueSize bounds each connection's outbound queue, in frames.
	QueueSize int
	// SlowGrace is how long the event relay waits for room in a full queue
	// before it declares the client a slow consumer.
	SlowGrace time.Duration
	// WriteTimeout bounds the write of one frame.
	WriteTimeout time.Duration
	// PingInterval is how often the server pings; a ping unanswered for as
	// long again closes the connection.
	PingInterval time.Duration
	// MaxPromptBytes bounds the text of one prompt sent over the socket.
	MaxPromptBytes int
	// OriginPatterns lists the browser origins besides the gateway's own
	// host that may open a socket (see websocket.AcceptOptions).
	OriginPatterns []string
	// MaxPerKey and MaxPerTenant cap the sockets open at once with one API
	// key and in one tenant; one more is refused with 429.
	MaxPerKey, MaxPerTenant int
}

// DefaultConfig returns 1 MiB frames, 4096-frame queues, a 30 s ping, and
// at most 32 sockets per key and 512 per tenant.
func DefaultConfig() Config {
	return Config{ReadLimit: 1 << 20, QueueSize: 4096, SlowGrace: 2 * time.Second, WriteTimeout: 10 * time.Second,
		PingInterval: 30 * time.Second, MaxPromptBytes: 256 << 10, MaxPerKey: 32, MaxPerTenant: 512}
}

// Chats is what the socket asks streammgr, access-checked (see chats.Chats).
type Chats interface {
	Session(ctx context.Context, p identity.Principal, id string) (events.Session, error)
	Snapshot(ctx context.Context, p identity.Principal, id string) (events.Snapshot, error)
	Send(ctx context.Context, p identity.Principal, t chats.Turn) (events.StartTurnReply, error)
	Cancel(ctx context.Context, p identity.Principal, session, runID string) (json.RawMessage, error)
	Interrupt(ctx context.Context, p identity.Principal, session, runID string) (json.RawMessage, error)
	Answer(ctx context.Context, p identity.Principal, session string, a api.Answer) (json.RawMessage, error)
}

// Artifacts answers the skills picker, access-checked (see
// artifacts.Artifacts).
type Artifacts interface {
	Available(ctx context.Context, p identity.Principal, project, profile string) ([]events.AvailableSkill, error)
}

// Projects lists the projects whose notifications a principal receives.
type Projects interface {
	ListProjects(ctx context.Context, p identity.Principal) ([]api.Project, error)
}

// Limiter spends one request of a key's budget (see auth.Authenticator).
type Limiter interface {
	Allow(keyID string) error
}

// Deps are what the hub runs on.
type Deps struct {
	NATS      *nats.Conn
	Chats     Chats
	Artifacts Artifacts
	Engines   Engines
	Projects  Projects
	Limiter   Limiter
	Logger    *slog.Logger
}

// Stats counts what the hub has seen, for tests and metrics.
type Stats struct {
	Open          int64 // connections open now
	SlowConsumers int64 // connections closed because their client fell behind
	MaxQueueDepth int64 // the deepest any outbound queue has been
}

// Hub serves WebSocket connections and owns their goroutines: Close ends
// them all and waits.
type Hub struct {
	cfg      Config
	d        Deps
	js       jetstream.JetStream
	ctx      context.Context
	cancel   context.CancelFunc
	stopping chan struct{} // closed by Close: connections say bye
	mu       sync.Mutex    // orders wg.Add after Close has begun; guards the counts
	closed   bool
	wg       sync.WaitGroup
	perKey   map[string]int // open sockets by API key
	perTen   map[string]int // and by tenant

	open, slow, maxDepth atomic.Int64
}

// New returns a hub. Zero fields of cfg take DefaultConfig's values.
func New(cfg Config, d Deps) (*Hub, error) {
	def := DefaultConfig()
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = def.ReadLimit
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = def.QueueSize
	}
	if cfg.SlowGrace <= 0 {
		cfg.SlowGrace = def.SlowGrace
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = def.WriteTimeout
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = def.PingInterval
	}
	if cfg.MaxPromptBytes <= 0 {
		cfg.MaxPromptBytes = def.MaxPromptBytes
	}
	if cfg.MaxPerKey <= 0 {
		cfg.MaxPerKey = def.MaxPerKey
	}
	if cfg.MaxPerTenant <= 0 {
		cfg.MaxPerTenant = def.MaxPerTenant
	}
	js, err := jetstream.New(d.NATS)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{cfg: cfg, d: d, js: js, ctx: ctx, cancel: cancel, stopping: make(chan struct{}),
		perKey: map[string]int{}, perTen: map[string]int{}}, nil
}

// Stats returns the hub's counters.
func (h *Hub) Stats() Stats {
	return Stats{Open: h.open.Load(), SlowConsumers: h.slow.Load(), MaxQueueDepth: h.maxDepth.Load()}
}

// Close tells every client bye (with its cursor, so it resumes exactly on
// another replica), gives them grace to go, then cuts the rest off and waits
// for every connection's goroutines.
func (h *Hub) Close(grace time.Duration) {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.stopping)
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
	}
	h.cancel()
	<-done
}

// overLimit says why p may not open another socket, or "" if it may; h.mu
// is held.
func (h *Hub) overLimit(p identity.Principal) string {
	switch {
	case h.perKey[p.KeyID] >= h.cfg.MaxPerKey:
		return fmt.Sprintf("this API key has %d WebSockets open, the most it may; close one first", h.perKey[p.KeyID])
	case h.perTen[p.TenantID] >= h.cfg.MaxPerTenant:
		return fmt.Sprintf("this tenant has %d WebSockets open, the most it may; close one first", h.perTen[p.TenantID])
	}
	return ""
}

// release counts p's socket out.
func (h *Hub) release(p identity.Principal) {
	h.mu.Lock()
	defer h.mu.Unlock()
	countOut(h.perKey, p.KeyID)
	countOut(h.perTen, p.TenantID)
}

func countOut(m map[string]int, k string) {
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}

// ServeWS upgrades an authenticated request and serves the connection until
// either side closes it or the hub does.
func (h *Hub) ServeWS(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	if refusal := h.overLimit(p); refusal != "" {
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "too_many_connections", "message": refusal}})
		return
	}
	h.perKey[p.KeyID]++
	h.perTen[p.TenantID]++
	h.wg.Add(1)
	h.mu.Unlock()
	defer h.wg.Done()
	defer h.release(p)
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: h.cfg.OriginPatterns})
	if err != nil {
		return // Accept has answered the request
	}
	ws.SetReadLimit(16 * h.cfg.ReadLimit)
	h.open.Add(1)
	defer h.open.Add(-1)
	c := newConn(h, ws, p)
	c.serve()
}
