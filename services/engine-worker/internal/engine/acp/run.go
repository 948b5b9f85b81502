package acp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Run runs one turn; see the package doc. It returns nil when the turn
// ended with a result (interrupted ones included), the classified error of
// a failed turn or a crashed process, or the cancel cause after a cancel.
func (e *Engine) Run(ctx context.Context, req engine.Request, emit engine.Emit) error {
	cred, err := e.cfg.Credentials.Credential(ctx, e.key.Tenant, e.key.Account)
	if err != nil {
		return err
	}
	model := cmp.Or(req.Model, e.cfg.DefaultModel)
	if e.p.Unavailable != nil {
		if why := e.p.Unavailable(model, "", cred); why != "" {
			return engine.Unavailable(e.p.Type, model, why)
		}
	}
	home := e.home
	if req.Ephemeral {
		// A turn nobody continues runs in a scratch HOME, removed once its
		// process is gone: the session the agent saves goes with it.
		scratch, remove, err := e.scratchHome()
		if err != nil {
			return err
		}
		defer remove()
		home = scratch
	}
	l, err := e.command(home, req.SessionID, cred, model, req.Workspace, req.MCPServers)
	if err != nil {
		return err
	}
	e.usedSpec(req.SessionID, l.spec)
	unlock, err := e.lockSession(ctx, req.ResumeSessionID)
	if err != nil {
		return err
	}
	defer unlock()
	a, warm, err := e.acquire(ctx, l, req.ResumeSessionID)
	if err != nil {
		return err
	}
	// done hands the process back: an ephemeral turn's is stopped before
	// its scratch home goes, any other may stay warm.
	done := func(reusable bool) {
		if req.Ephemeral {
			e.stop(a)
			return
		}
		e.release(a, reusable)
	}
	log := e.Log.With("run_id", req.RunID, "warm", warm)
	servers, status := mcpServers(req.MCPServers, a.info.AgentCapabilities.MCPCapabilities)
	if e.p.MCPConfig != nil {
		// The agent has them from its settings, written at start-up.
		servers, status = []map[string]any{}, connected(req.MCPServers)
	}
	s, err := e.openSession(ctx, a, req, servers)
	if err != nil {
		done(!a.p.Exited() && !errors.Is(err, context.Canceled))
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	log = log.With("session_id", s.id, "opened", s.how)
	if s.how != "live" {
		e.configure(ctx, a, s, model, req.Effort)
	}
	if s.id != req.ResumeSessionID {
		// The new session is this turn's: claim it too.
		unlockNew, err := e.lockSession(ctx, s.id)
		if err != nil {
			done(true)
			return err
		}
		defer unlockNew()
	}
	e.mu.Lock()
	live := a.sessions[s.id]
	if live == nil {
		live = &liveSession{}
		a.sessions[s.id] = live
	}
	e.owner[s.id] = a
	e.mu.Unlock()

	// What the session runs: the turn's model, unless the agent put its own
	// in its place (RunsOnlyListed); messages are stamped with that one. The
	// user is told once, when the session opens.
	runs, substituted := model, false
	if s.how != "live" {
		if m, ok := Substituted(e.p, s.resp, model); ok {
			runs, substituted = m, true
			live.runs = m
		}
	} else if live.runs != "" {
		runs = live.runs
	}
	t := &turn{e: e, a: a, req: req, log: log, secrets: secrets(cred), live: live, loaded: s.how == "load",
		conv: &Converter{Profile: e.p, SessionID: s.id, Model: runs, Base: req.RunID, MCPServers: serverNames(req.MCPServers),
			MCPTools: toolIndex(ctx, req.MCPServers, log), CostBase: live.cost}}
	t.emitFn = emit
	init := []events.Output{events.SystemInit{SessionID: s.id, Model: runs, Engine: e.p.Type, Tools: []string{}, MCPServers: status}}
	if substituted {
		log.Warn("acp: the agent runs another model", "requested", model, "runs", runs)
		init = append(init, events.Notification{SessionID: s.id, Level: events.LevelWarning,
			Title:   e.p.Name + " runs " + runs,
			Message: fmt.Sprintf("%s does not offer %s with this provider and runs %s in its place.", e.p.Name, model, runs)})
	}
	if s.notice != "" {
		log.Warn("acp: resume not possible; new session", "resumed", req.ResumeSessionID, "notice", s.notice)
		init = append(init, events.Notification{SessionID: s.id, Level: events.LevelWarning,
			Title: e.p.Name + " cannot resume", Message: s.notice})
	}
	if err := t.emitAll(init); err != nil {
		done(true)
		return err
	}
	reusable, err := t.run(ctx, s.id)
	if c, ok := t.conv.Cost(); ok {
		live.cost = c
	}
	done(reusable)
	return err
}

// connected reports servers as connected (given to the agent).
func connected(servers []engine.MCPServer) []events.MCPServer {
	out := make([]events.MCPServer, 0, len(servers))
	for _, s := range servers {
		out = append(out, events.MCPServer{Name: s.Name, Status: events.MCPConnected})
	}
	return out
}

// toolIndex answers which of servers list a tool. It asks every server
// that can tell (engine.MCPServer.Tools) at once, on the first question,
// so a turn without an ambiguous call lists nothing; a server that fails
// to answer within listTimeout is logged and counts as listing nothing.
func toolIndex(ctx context.Context, servers []engine.MCPServer, log *slog.Logger) func(tool string) []string {
	var once sync.Once
	index := map[string][]string{}
	return func(tool string) []string {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(ctx, listTimeout)
			defer cancel()
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, s := range servers {
				if s.Tools == nil {
					continue
				}
				wg.Go(func() {
					names, err := s.Tools(ctx)
					if err != nil {
						log.Warn("acp: could not list an MCP server's tools", "server", s.Name, "err", err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					for _, n := range names {
						index[n] = append(index[n], s.Name)
					}
				})
			}
			wg.Wait()
		})
		return index[tool]
	}
}

// listTimeout bounds toolIndex's listing.
const listTimeout = 10 * time.Second

func serverNames(servers []engine.MCPServer) []string {
	names := make([]string, 0, len(servers))
	for _, s := range servers {
		names = append(names, s.Name)
	}
	return names
}
