package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
	"clopen.dev/pkg/platform/natsx"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/internal/engine/scripted"
)

// planTimeout bounds the content request at run start.
const planTimeout = 10 * time.Second

// layoutOf is where the engine typ reads Clopen's artifacts, as its adapter
// declares it: the scripted engine's own, else its row of the engines
// table.
func layoutOf(typ events.EngineType) (plan.Layout, bool) {
	if typ == events.EngineScripted {
		return scripted.Layout(), true
	}
	s, ok := engines.Lookup(typ)
	return s.Layout, ok
}

// configDir is the config dir of an engine account outside any run, for
// what the account does for the tenant as a whole (its catalog, structured
// generations): <EngineConfig>/<tenant>/<engine>/<account>, "default"
// standing for the active account. No plan is applied to it. Created 0700.
func (w *Worker) configDir(tenant string, typ events.EngineType, account string) (string, error) {
	dir, _, err := w.makeConfigDir(tenant, string(typ), accountName(account))
	return dir, err
}

// sessionConfigDir is the isolated config dir a chat session's runs apply
// their plans to and its engine reads:
// <EngineConfig>/<tenant>/sessions/<session>/<engine>/<account>. A run's
// content depends on its project and profile, so a dir shared wider (by
// the tenant, or by a project whose sessions run different profiles) would
// let two runs that start together each apply its plan over the other's;
// a session's turns run one at a time. created says the dir is new: it
// holds none of the engine session state that lives in it (Codex's
// threads), whatever the workspace's copy of the session says.
func (w *Worker) sessionConfigDir(job events.Job) (dir string, created bool, err error) {
	return w.makeConfigDir(job.Tenant, "sessions", job.SessionID, string(job.Engine), accountName(job.AccountID))
}

// accountName is the directory name of an account, "default" for the
// active one.
func accountName(account string) string {
	if account == "" {
		return "default"
	}
	return account
}

// makeConfigDir creates <EngineConfig>/<tenant>/<elems...> 0700 and says
// whether it was not there before. Every element must be one path element.
func (w *Worker) makeConfigDir(tenant string, elems ...string) (string, bool, error) {
	for _, e := range elems {
		if err := events.ValidToken(e); err != nil || strings.ContainsAny(e, `/\`) || e == ".." {
			return "", false, fmt.Errorf("%q: not usable as a directory name", e)
		}
	}
	root, err := filepath.Abs(w.cfg.EngineConfig)
	if err != nil {
		return "", false, err
	}
	dir := filepath.Join(append([]string{root, tenant}, elems...)...)
	_, err = os.Stat(dir)
	created := errors.Is(err, os.ErrNotExist)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("engine config dir: %w", err)
	}
	return dir, created, nil
}

// prepared is what a run starts with once its artifacts are in place.
type prepared struct {
	configDir string
	// fresh says configDir was made for this run (see sessionConfigDir).
	fresh    bool
	prompt   []events.Block
	revision int64
	// mcpServers are the slugs of the run's external MCP servers.
	mcpServers []string
}

// prepare asks artifacts for the run's content, places it through the
// engine's layout into a plan and applies that to the session's isolated
// config dir, makes the content's permissions the run's policy, and builds
// the engine prompt: the plan's preamble (if any) as the first text block,
// the config dir token resolved in every text block.
//
// Artifacts is part of every deployment, so content that cannot be had
// fails the run rather than running an engine with a configuration nobody
// chose (this holds for the scripted engine too: it is how the wiring is
// tested).
func (w *Worker) prepare(ctx context.Context, r *run) (prepared, error) {
	job := r.job
	layout, ok := layoutOf(job.Engine)
	if !ok {
		return prepared{}, fmt.Errorf("engine %q: no layout", job.Engine)
	}
	dir, fresh, err := w.sessionConfigDir(job)
	if err != nil {
		return prepared{}, err
	}
	subject, err := events.ServiceSubject(events.ArtifactsService, events.OpContent)
	if err != nil {
		return prepared{}, err
	}
	// The run's own token: artifacts hands a run's content to its holder only.
	cctx, cancel := context.WithTimeout(svc.WithToken(ctx, job.DispatchToken), planTimeout)
	defer cancel()
	var content events.Content
	err = svc.Call(cctx, w.nc, subject, events.ContentRequest{Caller: events.Caller{TenantID: job.Tenant, UserID: job.RequestedBy},
		Engine: job.Engine, ProjectID: job.ProjectID, ProfileID: job.ProfileID}, &content)
	var apiErr *events.APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusServiceUnavailable {
		return prepared{}, fmt.Errorf("artifacts service unavailable, cannot configure the engine: %s", apiErr.Message)
	}
	if err != nil {
		return prepared{}, fmt.Errorf("artifacts content: %w", err)
	}
	pl := plan.Render(layout, content)
	if _, err := plan.Apply(dir, pl); err != nil {
		return prepared{}, fmt.Errorf("apply artifacts: %w", err)
	}
	r.policy = pl.Permissions
	prompt := make([]events.Block, 0, len(job.Prompt)+1)
	if pl.PromptPreamble != "" {
		prompt = append(prompt, events.TextBlock{Text: plan.Resolve(dir, pl.PromptPreamble)})
	}
	for _, b := range job.Prompt {
		if t, ok := b.(events.TextBlock); ok {
			b = events.TextBlock{Text: plan.Resolve(dir, t.Text)}
		}
		prompt = append(prompt, b)
	}
	var servers []string
	for _, m := range pl.MCPServers {
		if m.Name != MCPServerName {
			servers = append(servers, m.Name)
		}
	}
	return prepared{configDir: dir, fresh: fresh, prompt: prompt, revision: pl.Revision, mcpServers: servers}, nil
}

// watchArtifacts retires a tenant's engine instances whenever its artifact
// revision changes: idle instances at once, busy ones when their runs end,
// so the next run starts on the new configuration; and it drops the
// tenant's cached catalogs (accounts and providers are artifacts). It waits for the bucket
// (artifacts declares it) and never fails the worker.
// watchingArtifacts is the key of artifactRevs set once the watch runs.
const watchingArtifacts = ""

func (w *Worker) watchArtifacts(ctx context.Context) error {
	kv, err := natsx.WaitKV(ctx, w.js, events.BucketArtifactRev)
	if err != nil {
		if ctx.Err() == nil {
			w.log.WarnContext(ctx, "not watching artifact revisions", "err", err)
		}
		return nil
	}
	watcher, err := kv.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		w.log.WarnContext(ctx, "not watching artifact revisions", "err", err)
		return nil
	}
	defer func() { _ = watcher.Stop() }()
	w.artifactRevs.Store(watchingArtifacts, "")
	for {
		select {
		case e, ok := <-watcher.Updates():
			if !ok {
				return nil
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			for _, typ := range w.pool.Types() {
				w.pool.Retire(typ, e.Key())
			}
			w.catalogs.invalidate(e.Key())
			w.artifactRevs.Store(e.Key(), string(e.Value()))
			w.log.DebugContext(ctx, "artifacts changed: engine instances retired", "tenant", e.Key(), "revision", string(e.Value()))
		case <-ctx.Done():
			return nil
		}
	}
}
