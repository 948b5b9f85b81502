package enginetest

import (
	"context"
	"sync"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// AlwaysFails is an engine whose every run fails with Err before emitting
// anything, for the worker's failure paths.
type AlwaysFails struct {
	EngineType events.EngineType
	Err        error
}

var _ engine.Engine = AlwaysFails{}

// Type implements engine.Engine.
func (a AlwaysFails) Type() events.EngineType { return a.EngineType }

// Run implements engine.Engine: it returns Err.
func (a AlwaysFails) Run(context.Context, engine.Request, engine.Emit) error { return a.Err }

// Factory returns an engine.Factory that builds e for every key.
func Factory(e engine.Engine) engine.Factory {
	return func(context.Context, engine.Key) (engine.Engine, error) { return e, nil }
}

// Answers is an engine whose every turn answers Text in one assistant
// message and ends with a successful result; it records each request. Its
// catalog is Catalog, or the error CatalogErr.
type Answers struct {
	EngineType events.EngineType
	Text       string
	Catalog    []events.EngineModel
	CatalogErr error

	mu       sync.Mutex
	requests []engine.Request
	catalogs []engine.CatalogRequest
}

var (
	_ engine.Engine    = (*Answers)(nil)
	_ engine.Cataloger = (*Answers)(nil)
)

// Type implements engine.Engine.
func (a *Answers) Type() events.EngineType { return a.EngineType }

// Run implements engine.Engine.
func (a *Answers) Run(_ context.Context, req engine.Request, emit engine.Emit) error {
	a.mu.Lock()
	a.requests = append(a.requests, req)
	a.mu.Unlock()
	msg := events.AssistantMessage{MessageBase: events.MessageBase{MessageID: "msg-1", SessionID: "answers-session",
		Engine: events.MessageEngine{Type: a.EngineType, Model: events.ModelRef{ID: req.Model}}},
		Content: []events.Block{events.TextBlock{Text: a.Text}}}
	if err := emit(msg); err != nil {
		return err
	}
	return emit(events.Result{Subtype: events.ResultSuccess, SessionID: "answers-session", NumTurns: 1})
}

// Models implements engine.Cataloger.
func (a *Answers) Models(_ context.Context, req engine.CatalogRequest) ([]events.EngineModel, error) {
	a.mu.Lock()
	a.catalogs = append(a.catalogs, req)
	a.mu.Unlock()
	return a.Catalog, a.CatalogErr
}

// Requests returns the turns run so far.
func (a *Answers) Requests() []engine.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]engine.Request(nil), a.requests...)
}

// CatalogRequests returns the catalog reads so far.
func (a *Answers) CatalogRequests() []engine.CatalogRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]engine.CatalogRequest(nil), a.catalogs...)
}
