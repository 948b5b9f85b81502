// Package engines is the gateway's side of the engine workers: which engines
// have a worker (the workers bucket), their model catalogs and structured
// generation (svc.engine.<engine>.<op>, answered by any worker that has the
// engine). Every request carries the caller's events.Caller; the workers
// check the tenant and the account, and the gateway checks project access
// before asking for anything about a project.
package engines

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// Timeouts of the calls; a generation runs a model, a catalog may too.
const (
	modelsTimeout   = 40 * time.Second
	generateTimeout = 200 * time.Second
	// beatFresh is how recent a worker's heartbeat must be for its engines
	// to count as ready (workers beat every few seconds; their bucket
	// forgets them after 15 s).
	beatFresh = 20 * time.Second
)

// Projects answers whether a principal may use a project.
type Projects interface {
	Project(ctx context.Context, p identity.Principal, id string) (api.Project, error)
}

// Engines asks engine workers. It is safe for concurrent use.
type Engines struct {
	nc       *nats.Conn
	bus      *identity.Bus
	projects Projects
}

// New returns an Engines reading the workers bucket over nc and calling
// the workers through bus.
func New(nc *nats.Conn, bus *identity.Bus, projects Projects) *Engines {
	return &Engines{nc: nc, bus: bus, projects: projects}
}

// List returns every engine type, ready when a live worker offers it; one
// that is not says why and what to do, as the first live worker (by id)
// that checked it reported, else where to look.
func (e *Engines) List(ctx context.Context) ([]api.EngineReadiness, error) {
	out := make([]api.EngineReadiness, 0, len(events.EngineTypes()))
	byEngine := map[events.EngineType]*api.EngineReadiness{}
	for _, t := range events.EngineTypes() {
		out = append(out, api.EngineReadiness{Engine: t, Versions: []string{}})
		byEngine[t] = &out[len(out)-1]
	}
	workers, err := e.workers(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(workers, func(a, b events.WorkerInfo) int { return strings.Compare(a.ID, b.ID) })
	problems := map[events.EngineType]events.EngineProblem{}
	for _, w := range workers {
		for _, p := range w.Unready {
			if _, seen := problems[p.Engine]; !seen {
				problems[p.Engine] = p
			}
		}
	}
	for _, w := range workers {
		for _, st := range w.Engines {
			r, ok := byEngine[st.Engine]
			if !ok {
				continue
			}
			r.Ready = true
			r.Workers++
			if !slices.Contains(r.Versions, st.Version) {
				r.Versions = append(r.Versions, st.Version)
			}
		}
	}
	for i := range out {
		if out[i].Ready {
			continue
		}
		out[i].Message = notOffered(out[i].Engine)
		if p, ok := problems[out[i].Engine]; ok {
			out[i].State = p.State
			out[i].Message = p.State + ": " + p.Fix
		}
	}
	return out, nil
}

// notOffered says that an engine is not ready and where to look: the
// worker's doctor names what is missing (the CLI, an account, a
// configuration) and the command that fixes it.
func notOffered(engine events.EngineType) string {
	return "no worker offers " + string(engine) + " right now; `clopen engines doctor` on a worker says what it needs"
}

// workers reads the live heartbeats; no bucket yet means no worker ever ran.
func (e *Engines) workers(ctx context.Context) ([]events.WorkerInfo, error) {
	js, err := jetstream.New(e.nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, events.BucketWorkers)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []events.WorkerInfo
	for k := range keys.Keys() {
		entry, err := kv.Get(ctx, k)
		if err != nil {
			continue // gone since the listing
		}
		var w events.WorkerInfo
		if json.Unmarshal(entry.Value(), &w) == nil && time.Since(w.BeatAt) < beatFresh {
			out = append(out, w)
		}
	}
	return out, nil
}

// Models returns an engine's catalog as p's tenant and account see it. No
// worker with the engine is not an error: the list is empty and Message
// says why.
func (e *Engines) Models(ctx context.Context, p identity.Principal, engine events.EngineType, account, provider string) (events.ModelsReply, error) {
	subject, err := subjectOf(engine, events.OpModels)
	if err != nil {
		return events.ModelsReply{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	var out events.ModelsReply
	err = e.bus.Call(ctx, subject, events.ModelsRequest{Caller: p.Caller(), Engine: engine, AccountID: account, Provider: provider}, &out)
	if errors.Is(err, nats.ErrNoResponders) {
		return events.ModelsReply{Models: []events.EngineModel{}, Message: noWorker(engine)}, nil
	}
	if out.Models == nil {
		out.Models = []events.EngineModel{}
	}
	return out, err
}

// Generate runs a generation on a worker with the engine. The git
// generators need a project p may use. No worker with the engine is 503.
func (e *Engines) Generate(ctx context.Context, p identity.Principal, req events.GenerateRequest) (events.GenerateReply, error) {
	if req.ProjectID != "" {
		if _, err := e.projects.Project(ctx, p, req.ProjectID); err != nil {
			return events.GenerateReply{}, err
		}
	}
	subject, err := subjectOf(req.Engine, events.OpGenerate)
	if err != nil {
		return events.GenerateReply{}, err
	}
	req.Caller = p.Caller()
	ctx, cancel := context.WithTimeout(ctx, generateTimeout)
	defer cancel()
	var out events.GenerateReply
	err = e.bus.Call(ctx, subject, req, &out)
	if errors.Is(err, nats.ErrNoResponders) {
		return out, svc.Unavailable("%s", noWorker(req.Engine))
	}
	return out, err
}

func subjectOf(engine events.EngineType, op string) (string, error) {
	switch {
	case engine == "":
		return "", apierr.New(apierr.ErrInvalid, "engine: missing (one of %v)", events.EngineTypes())
	case !engine.Valid():
		return "", apierr.New(apierr.ErrInvalid, "engine: unknown engine %q", engine)
	}
	return events.EngineSubject(engine, op)
}

func noWorker(engine events.EngineType) string { return "no worker has " + string(engine) + " ready" }

// sourceTimeout bounds a clone or push on a worker: under the HTTP write
// timeout, and as long as the worker allows itself.
const sourceTimeout = 4 * time.Minute

// Clone clones a project's repository on an engine worker into a snapshot
// of p's tenant. The caller has checked p may change the project.
func (e *Engines) Clone(ctx context.Context, p identity.Principal, req events.CloneRequest) (events.CloneReply, error) {
	req.Caller = p.Caller()
	var out events.CloneReply
	return out, e.source(ctx, events.OpSourceClone, req, &out)
}

// Push pushes a session's snapshot to a branch of its project's repository
// on an engine worker. The caller has checked p may use the session.
func (e *Engines) Push(ctx context.Context, p identity.Principal, req events.PushRequest) (events.PushReply, error) {
	req.Caller = p.Caller()
	var out events.PushReply
	return out, e.source(ctx, events.OpSourcePush, req, &out)
}

func (e *Engines) source(ctx context.Context, op string, req, out any) error {
	subject, err := events.SourceSubject(op)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	defer cancel()
	err = e.bus.Call(ctx, subject, req, out)
	if errors.Is(err, nats.ErrNoResponders) {
		return svc.Unavailable("no engine worker is running to reach the repository")
	}
	return err
}
