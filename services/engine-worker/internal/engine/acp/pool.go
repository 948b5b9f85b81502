package acp

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// agent is a started, initialized agent process and the ACP sessions it
// has open. A turn owns it while it runs; between turns it waits warm in
// the engine's Procs, under its spec.
type agent struct {
	p        *proc
	spec     string
	home     string // the HOME it runs with
	info     InitializeResponse
	sessions map[string]*liveSession
}

// Stop stops the process now.
func (a *agent) Stop(ctx context.Context) { a.p.Stop(ctx) }

// Exited reports whether the process is gone.
func (a *agent) Exited() bool { return a.p.Exited() }

// liveSession is what the client remembers of a session open in a process.
type liveSession struct {
	cost  float64           // running cost at the end of its last turn
	usage events.TokenUsage // running usage, for agents that report only that
	runs  string            // the model it runs when the agent put its own in the turn's place
}

// launch is how a turn's process is started.
type launch struct {
	argv []string
	env  []string
	dir  string
	home string
	spec string // fingerprint of all of the above and the credential
	// confine is the process's sandbox; nil runs it unconfined.
	confine *engine.Confinement
}

// command builds the launch of a turn of chat ("" for none): the profile's
// settings written into home (the instance's, or a scratch one), the
// environment, and the command line. Confined, the credential is the
// chat's placeholder, so a warm process serves only its own chat.
func (e *Engine) command(home, chat string, cred Credential, model, workspace string, servers []engine.MCPServer) (launch, error) {
	cred, err := e.route(cred, chat)
	if err != nil {
		return launch{}, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return launch{}, fmt.Errorf("%s state dir: %w", e.p.Name, err)
	}
	if err := os.MkdirAll(e.cfg.CacheDir, 0o700); err != nil {
		return launch{}, fmt.Errorf("%s cache dir: %w", e.p.Name, err)
	}
	extra, err := e.p.Setup(SetupInput{Home: home, Cred: cred, Model: model, CacheDir: e.cfg.CacheDir, Workspace: workspace, Chat: chat, Retries: e.cfg.MaxRetries})
	if err != nil {
		return launch{}, fmt.Errorf("%s settings: %w", e.p.Name, err)
	}
	env := []string{
		"PATH=" + cmp.Or(os.Getenv("PATH"), engine.DefaultPath),
		"HOME=" + home,
		"LANG=" + cmp.Or(os.Getenv("LANG"), "C.UTF-8"),
		"TMPDIR=" + os.TempDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		// Caches (OpenCode's provider packages) are the instance's even for
		// a scratch home: they hold no session, and refilling them costs
		// seconds on every start.
		"XDG_CACHE_HOME=" + filepath.Join(e.home, ".cache"),
		"NO_UPDATE_NOTIFIER=1", "NO_COLOR=1", "DO_NOT_TRACK=1",
	}
	if e.p.MCPConfig != nil && len(servers) > 0 {
		mcpEnv, err := e.p.MCPConfig(home, servers)
		if err != nil {
			return launch{}, fmt.Errorf("%s MCP settings: %w", e.p.Name, err)
		}
		extra = append(extra, mcpEnv...)
	}
	env = append(append(env, extra...), e.cfg.Env...)
	argv := e.cfg.Argv(e.p.Args...)
	if e.p.ModelArgs != nil && model != "" {
		argv = append(argv, e.p.ModelArgs(model)...)
	}
	state := []string{home}
	if home != e.home {
		state = append(state, e.home)
	}
	confine, err := e.cfg.Sandbox.For(e.key.Tenant, e.cfg.Bin, workspace, cred.BaseURL, state...)
	if err != nil {
		return launch{}, err
	}
	if confine != nil {
		// Shared by every tenant: readable, never writable.
		confine.Spec.ReadOnly = append(confine.Spec.ReadOnly, e.cfg.CacheDir)
	}
	h := sha256.New()
	for _, s := range append(append(append([]string{}, argv...), env...), workspace, cred.fingerprint(), confine.Fingerprint()) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return launch{argv: argv, env: env, dir: workspace, home: home, spec: hex.EncodeToString(h.Sum(nil)[:12]), confine: confine}, nil
}

// acquire hands a turn a process: the warm one that has the session it
// resumes open, else any warm one started the same way, else a new one.
func (e *Engine) acquire(ctx context.Context, l launch, resume string) (a *agent, warm bool, err error) {
	if e.Procs.Disposed() {
		return nil, false, engine.ShuttingDown(e.p.Name)
	}
	if resume != "" {
		a, warm = e.Procs.Take(l.spec, func(a *agent) bool { return a.sessions[resume] != nil })
	}
	if !warm {
		a, warm = e.Procs.Take(l.spec, func(*agent) bool { return true })
	}
	if !warm {
		if a, err = e.start(ctx, l); err != nil {
			return nil, false, err
		}
		e.Procs.Started()
	}
	if !e.Procs.Use(a) {
		e.Procs.Release(a, "", false)
		return nil, false, engine.ShuttingDown(e.p.Name)
	}
	return a, warm, nil
}

// start starts a process and initializes the connection.
func (e *Engine) start(ctx context.Context, l launch) (*agent, error) {
	bad := func(line []byte, err error) {
		if _, seen := e.unknown.LoadOrStore("line", true); !seen {
			e.Log.Info("acp: ignoring a stdout line that is not JSON-RPC (logged once)", "err", err)
		}
	}
	if l.confine != nil && e.p.PrimeCache != nil {
		if err := primeCache(ctx, e.cfg.Bin, e.p.PrimeCache, e.cfg.CacheDir); err != nil {
			return nil, &engine.Error{Kind: events.KindNotInstalled, Msg: e.p.Name + " could not fill its cache: " + err.Error(), Err: err}
		}
	}
	p, err := startProc(l.argv, l.env, l.dir, e.cfg.KillGrace, e.cfg.Tap, bad, l.confine)
	if err != nil {
		return nil, &engine.Error{Kind: events.KindNotInstalled, Msg: "start " + e.p.Name + ": " + err.Error(), Err: err}
	}
	a := &agent{p: p, spec: l.spec, home: l.home, sessions: map[string]*liveSession{}}
	ictx, cancel := context.WithTimeout(ctx, e.cfg.StartTimeout)
	defer cancel()
	err = p.conn.Call(ictx, "initialize", map[string]any{
		"protocolVersion": ProtocolVersion,
		"clientCapabilities": map[string]any{
			"fs":       map[string]any{"readTextFile": true, "writeTextFile": true},
			"terminal": false,
		},
		"clientInfo": map[string]any{"name": "clopen", "title": "Clopen", "version": "1"},
	}, &a.info)
	if err != nil {
		p.Stop(context.Background())
		<-p.Done()
		return nil, startError(e.p.Name, err, p)
	}
	if a.info.ProtocolVersion != 0 && a.info.ProtocolVersion != ProtocolVersion {
		p.Stop(context.Background())
		return nil, &engine.Error{Kind: events.KindNotInstalled,
			Msg: fmt.Sprintf("%s speaks ACP version %d; Clopen speaks %d", e.p.Name, a.info.ProtocolVersion, ProtocolVersion)}
	}
	return a, nil
}

// release takes a process back after a turn: warm when the turn left it
// usable, else stopped.
func (e *Engine) release(a *agent, reusable bool) { e.Procs.Release(a, a.spec, reusable) }

// stop stops a process that will not be reused and waits until it is gone
// (bounded by the kill grace), so that its home can be removed after it.
func (e *Engine) stop(a *agent) {
	e.Procs.Drop(a)
	e.forgetSessions(a)
	ctx, cancel := context.WithTimeout(context.Background(), 2*e.cfg.KillGrace)
	defer cancel()
	a.p.Stop(ctx)
}

// scratchHome makes a HOME for a process whose state must not outlive it
// (a catalog read, an ephemeral turn); remove deletes it.
func (e *Engine) scratchHome() (home string, remove func(), err error) {
	if err := os.MkdirAll(e.cfg.StateDir, 0o700); err != nil {
		return "", nil, fmt.Errorf("%s state dir: %w", e.p.Name, err)
	}
	home, err = os.MkdirTemp(e.cfg.StateDir, ".scratch-")
	if err != nil {
		return "", nil, fmt.Errorf("%s scratch home: %w", e.p.Name, err)
	}
	return home, func() {
		if err := os.RemoveAll(home); err != nil {
			e.Log.Warn("acp: remove scratch home", "err", err)
		}
	}, nil
}

// forgetSessions removes a's sessions from the owner map.
func (e *Engine) forgetSessions(a *agent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id := range a.sessions {
		if e.owner[id] == a {
			delete(e.owner, id)
		}
	}
}

// lockSession waits until no turn uses session id and claims it: never two
// prompts on one ACP session at once. The returned func releases it.
func (e *Engine) lockSession(ctx context.Context, id string) (func(), error) {
	if id == "" {
		return func() {}, nil
	}
	for {
		e.mu.Lock()
		ch, busy := e.inTurn[id]
		if !busy {
			ch = make(chan struct{})
			e.inTurn[id] = ch
			e.mu.Unlock()
			return func() {
				e.mu.Lock()
				if e.inTurn[id] == ch {
					delete(e.inTurn, id)
				}
				e.mu.Unlock()
				close(ch)
			}, nil
		}
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// primed are the cache dirs a PrimeCache command has filled, in this
// process; primeMu keeps two from filling one at once.
var (
	primeMu sync.Mutex
	primed  = map[string]bool{}
)

// primeCache runs bin with args once for cacheDir, unconfined, with the
// cache as its XDG_CACHE_HOME and a scratch HOME, so that a confined
// agent, which may only read the cache, finds it filled, and opens the
// cache dir to it. A failure is tried again at the next start.
func primeCache(ctx context.Context, bin string, args []string, cacheDir string) error {
	primeMu.Lock()
	defer primeMu.Unlock()
	if primed[cacheDir] {
		return nil
	}
	home, err := os.MkdirTemp("", "clopen-prime-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + cmp.Or(os.Getenv("PATH"), engine.DefaultPath), "HOME=" + home, "XDG_CACHE_HOME=" + cacheDir}
	cmd.Dir = home
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	// The confined agent runs as a uid of its own: the cache, which holds
	// nothing of any tenant, must let it in.
	if err := os.Chmod(cacheDir, 0o755); err != nil {
		return err
	}
	primed[cacheDir] = true
	return nil
}
