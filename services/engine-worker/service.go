package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/internal/engine"
)

// QueueGroup is the queue group of the engine endpoints: every worker with
// an engine serves its subjects, and one of them answers each request.
const QueueGroup = "engine-worker"

// generateTimeout bounds one structured generation.
const generateTimeout = 3 * time.Minute

// serveEngines answers svc.engine.source.clone and .push, and
// svc.engine.<engine>.models and .generate for every engine this worker
// offers, until ctx ends; an engine offered later gets
// its endpoints when it is (setVersion). A micro service cannot drop an
// endpoint, so when an engine is withdrawn the service is made again
// without it.
func (w *Worker) serveEngines(ctx context.Context) error {
	for {
		s, err := micro.AddService(w.bus, micro.Config{Name: QueueGroup, Version: "0.1.0",
			Description: "model catalogs and structured generation of the engines this worker has"})
		if err != nil {
			return fmt.Errorf("engine service: %w", err)
		}
		srv := svc.NewServer(ctx, w.bus, s, w.cfg.Tokens.Verifier()) // stops the service when ctx ends
		w.vmu.Lock()
		w.endpoints, w.server, w.served = s, srv, map[events.EngineType]bool{}
		err = w.addSourceEndpoints(s, srv)
		for typ := range w.versions {
			if err != nil {
				break
			}
			err = w.addEndpoints(typ)
		}
		w.vmu.Unlock()
		again := false
		if err == nil {
			select {
			case <-ctx.Done():
			case <-w.reserve:
				again = true
			}
		}
		w.vmu.Lock()
		w.endpoints, w.server = nil, nil
		w.vmu.Unlock()
		srv.Stop()
		if !again {
			return err
		}
	}
}

// addEndpoints serves typ's endpoints on w.endpoints; w.vmu is held.
func (w *Worker) addEndpoints(typ events.EngineType) error {
	if w.served[typ] {
		return nil
	}
	w.served[typ] = true
	onInternal := func(err error) { w.log.Error("engine request", "err", err) }
	for op, h := range map[string]svc.Endpoint{
		events.OpModels:   svc.Handler(onInternal, w.models(typ)),
		events.OpGenerate: svc.Handler(onInternal, w.generate(typ)),
	} {
		subject, err := events.EngineSubject(typ, op)
		if err != nil {
			return err
		}
		if err := w.endpoints.AddEndpoint(op+"-"+string(typ), w.server.Bind(h), micro.WithEndpointSubject(subject), micro.WithEndpointQueueGroup(QueueGroup)); err != nil {
			return fmt.Errorf("endpoint %s: %w", subject, err)
		}
	}
	return nil
}

// models answers a catalog request. A catalog that cannot be read is an
// empty list with a message, never an error: the picker just has nothing
// to offer.
func (w *Worker) models(typ events.EngineType) func(context.Context, events.ModelsRequest) (events.ModelsReply, error) {
	return func(ctx context.Context, req events.ModelsRequest) (events.ModelsReply, error) {
		if err := w.checkScope(ctx, typ, req.Engine, req.Caller, req.AccountID); err != nil {
			return events.ModelsReply{}, err
		}
		models, err := w.catalog(ctx, catalogKey{tenant: req.TenantID, engine: typ, account: req.AccountID})
		if err != nil {
			return events.ModelsReply{Models: []events.EngineModel{}, Message: err.Error()}, nil
		}
		return events.ModelsReply{Models: byProvider(models, req.Provider)}, nil
	}
}

// generate answers a structured generation: the target model, provider and
// account come from the engine's catalog (the request's model and provider
// are preferences), the document is checked against the schema.
func (w *Worker) generate(typ events.EngineType) func(context.Context, events.GenerateRequest) (events.GenerateReply, error) {
	return func(ctx context.Context, req events.GenerateRequest) (events.GenerateReply, error) {
		if err := w.checkScope(ctx, typ, req.Engine, req.Caller, req.AccountID); err != nil {
			return events.GenerateReply{}, err
		}
		ctx, cancel := context.WithTimeout(ctx, generateTimeout)
		defer cancel()
		g, err := w.plan(ctx, req)
		defer g.cleanup()
		if err != nil {
			return events.GenerateReply{}, apiError(err)
		}
		if err := engine.CheckSchema(g.schema); err != nil {
			return events.GenerateReply{}, svc.Invalid("schema: %v", err)
		}
		key := catalogKey{tenant: req.TenantID, engine: typ, account: req.AccountID}
		target := events.EngineModel{ID: req.Model, Provider: req.Provider}
		switch models, err := w.catalog(ctx, key); {
		case errors.Is(err, errNoCatalog): // nothing to resolve against: the engine decides
		case err != nil:
			return events.GenerateReply{}, svc.Unavailable("%v", err)
		default:
			if target, err = engine.ResolveTarget(typ, models, req.Model, req.Provider); err != nil {
				return events.GenerateReply{}, apiError(err)
			}
		}
		dir, err := w.configDir(req.TenantID, typ, req.AccountID)
		if err != nil {
			return events.GenerateReply{}, err
		}
		eng, release, err := w.pool.Acquire(ctx, engine.Key{Engine: typ, Tenant: req.TenantID, Account: req.AccountID})
		if err != nil {
			return events.GenerateReply{}, apiError(err)
		}
		defer release()
		started := time.Now()
		doc, err := engine.Generate(ctx, eng, engine.GenerateRequest{Tenant: req.TenantID, Model: target.ID, Provider: target.Provider,
			AccountID: req.AccountID, Schema: g.schema, Prompt: g.prompt, Workspace: g.dir, ConfigDir: dir})
		if err == nil {
			doc, err = g.finish(doc)
		}
		outcome := "ok"
		if err != nil {
			outcome = string(engine.KindOf(err))
		}
		generations.Record(context.WithoutCancel(ctx), time.Since(started).Seconds(), metric.WithAttributes(
			attribute.String("engine", string(typ)), attribute.String("generator", req.Generator), attribute.String("outcome", outcome)))
		if err != nil {
			w.log.InfoContext(ctx, "generation failed", "engine", typ, "generator", req.Generator, "model", target.ID, "err", err)
			return events.GenerateReply{}, apiError(err)
		}
		return events.GenerateReply{Output: doc, Model: target.ID, Provider: target.Provider, AccountID: req.AccountID}, nil
	}
}

// checkScope validates what every engine request is scoped by: the engine
// (the subject's), the caller's tenant and the account, which must be one of
// the tenant's accounts of this engine.
func (w *Worker) checkScope(ctx context.Context, typ, asked events.EngineType, c events.Caller, account string) error {
	switch {
	case asked != "" && asked != typ:
		return svc.Invalid("engine %q asked on the subject of %s", asked, typ)
	case events.ValidToken(c.TenantID) != nil || strings.ContainsAny(c.TenantID, `/\`):
		return svc.Invalid("a request needs the caller's tenant")
	case account == "":
		return nil
	case events.ValidToken(account) != nil || strings.ContainsAny(account, `/\`):
		return svc.NotFound("account %q not found", account)
	}
	_, err := ArtifactAccounts(w.bus).Resolve(ctx, c.TenantID, typ, account)
	var apiErr *events.APIError
	switch {
	case errors.Is(err, engines.ErrNoAccount):
		return svc.NotFound("account %s not found for %s", account, typ)
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusServiceUnavailable:
		return svc.Unavailable("artifacts service unavailable, cannot check the account: %s", apiErr.Message)
	case err != nil:
		return fmt.Errorf("check account %s: %w", account, err)
	}
	return nil
}

// apiError maps an engine failure to the APIError the caller gets: the
// worker's one mapping of errors for its endpoints. The code is the error
// kind, so clients can react (sign in, pick another model, retry).
func apiError(err error) error {
	var apiErr *events.APIError
	if errors.As(err, &apiErr) {
		return err
	}
	var e *engine.Error
	if !errors.As(err, &e) && !errors.Is(err, engine.ErrUnknownEngine) && !errors.Is(err, context.DeadlineExceeded) {
		return err // unclassified: a 500, logged by the handler
	}
	kind := engine.KindOf(err)
	status := http.StatusBadGateway
	switch {
	case errors.Is(err, engine.ErrUnknownEngine):
		return svc.Unavailable("%v", err)
	case kind == events.KindInvalidRequest || kind == events.KindModelUnavailable:
		status = http.StatusBadRequest
	case kind == events.KindNeedsAccount || kind == events.KindAuth:
		status = http.StatusConflict
	case kind == events.KindRateLimited:
		status = http.StatusTooManyRequests
	case kind == events.KindTimeout:
		status = http.StatusGatewayTimeout
	case kind == events.KindNotInstalled:
		status = http.StatusServiceUnavailable
	}
	return svc.Errorf(status, string(kind), "%v", err)
}
