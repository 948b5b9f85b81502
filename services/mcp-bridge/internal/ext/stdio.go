package ext

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
)

// errStdioClosed is a start that lost the race with Handler.Close.
var errStdioClosed = errors.New("the bridge is stopping")

// stdioPool keeps one process per tenant and stdio server, shared by every
// run that uses it: started by the first call, stopped once no call has
// used it for idle, and forgotten when it fails, so the next call starts
// it again. A change to the server's command, args or env is a new process;
// the old one idles out.
type stdioPool struct {
	launch Launcher
	idle   time.Duration
	life   context.Context // ends every process

	mu     sync.Mutex
	procs  map[string]*stdioProc
	closed bool
}

// stdioProc is one running stdio server and the session with it.
type stdioProc struct {
	key   string
	slug  string
	ready chan struct{} // closed once the start ended; then cs or err is set
	cs    *mcp.ClientSession
	cmd   *exec.Cmd
	err   error

	// Guarded by the pool's mu.
	inflight int
	timer    *time.Timer

	stop sync.Once
}

// stdioKey names tenant's process of s: its scope, slug and a digest of
// what it runs with.
func stdioKey(tenant string, s events.ResolvedMCPServer) string {
	b, _ := json.Marshal([]any{s.Command, s.Args, s.Env})
	sum := sha256.Sum256(b)
	return tenant + "/" + s.ProjectID + "/" + s.Slug + "/" + hex.EncodeToString(sum[:8])
}

// acquire returns tenant's process of s, starting it when there is none;
// the caller calls release when its call is done.
func (p *stdioPool) acquire(ctx context.Context, tenant string, s events.ResolvedMCPServer) (*stdioProc, error) {
	if p.launch == nil {
		return nil, fmt.Errorf("MCP server %s is a stdio server and this bridge runs none (no sandbox for them)", s.Slug)
	}
	key := stdioKey(tenant, s)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errStdioClosed
	}
	pr, ok := p.procs[key]
	if !ok {
		pr = &stdioProc{key: key, slug: s.Slug, ready: make(chan struct{})}
		p.procs[key] = pr
	}
	pr.inflight++
	if pr.timer != nil {
		pr.timer.Stop()
	}
	p.mu.Unlock()
	if !ok {
		cs, cmd, err := p.start(ctx, tenant, s)
		var late *mcp.ClientSession
		p.mu.Lock()
		if err == nil && p.closed {
			// Close ran meanwhile and left this one to its starter.
			late, cs, err = cs, nil, errStdioClosed
		}
		pr.cs, pr.cmd, pr.err = cs, cmd, err
		close(pr.ready)
		p.mu.Unlock()
		if late != nil {
			_ = late.Close()
		}
	}
	select {
	case <-pr.ready:
	case <-ctx.Done():
		p.release(pr)
		return nil, ctx.Err()
	}
	if pr.err != nil {
		p.forget(pr)
		p.release(pr)
		return nil, pr.err
	}
	return pr, nil
}

// start launches s for tenant and initializes a session with it.
func (p *stdioPool) start(ctx context.Context, tenant string, s events.ResolvedMCPServer) (*mcp.ClientSession, *exec.Cmd, error) {
	cmd, started, err := p.launch(p.life, tenant, s)
	if err != nil {
		return nil, nil, fmt.Errorf("launch MCP server %s: %w", s.Slug, err)
	}
	cs, err := initialize(ctx, &mcp.CommandTransport{Command: cmd})
	started()
	if err != nil {
		return nil, nil, fmt.Errorf("start MCP server %s (stdio): %w%s", s.Slug, err, stderrOf(cmd))
	}
	return cs, cmd, nil
}

// release ends a call on pr; the last one arms the idle timer.
func (p *stdioPool) release(pr *stdioProc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr.inflight--
	if pr.inflight > 0 || pr.err != nil || p.procs[pr.key] != pr {
		return
	}
	if pr.timer == nil {
		pr.timer = time.AfterFunc(p.idle, func() { p.expire(pr) })
		return
	}
	pr.timer.Reset(p.idle)
}

// expire stops pr when it is still idle.
func (p *stdioPool) expire(pr *stdioProc) {
	p.mu.Lock()
	if pr.inflight > 0 || p.procs[pr.key] != pr {
		p.mu.Unlock()
		return
	}
	delete(p.procs, pr.key)
	p.mu.Unlock()
	pr.close()
}

func (p *stdioPool) forget(pr *stdioProc) {
	p.mu.Lock()
	if p.procs[pr.key] == pr {
		delete(p.procs, pr.key)
	}
	p.mu.Unlock()
}

// fail stops pr after a call on it failed for a reason other than the
// server's own answer, and says how the process ended: the error of the
// call in flight. The next call starts the server again.
func (p *stdioPool) fail(pr *stdioProc, err error) error {
	p.forget(pr)
	pr.close()
	how := "stopped"
	if st := pr.cmd.ProcessState; st != nil {
		how = "exited (" + st.String() + ")"
	}
	return fmt.Errorf("MCP server %s (stdio) %s during the call: %w%s; it is started again on the next call",
		pr.slug, how, err, stderrOf(pr.cmd))
}

// close stops every process.
func (p *stdioPool) close() {
	p.mu.Lock()
	p.closed = true
	var ready []*stdioProc
	for _, pr := range p.procs {
		select {
		case <-pr.ready:
			ready = append(ready, pr)
		default: // its starter sees closed and stops it
		}
	}
	p.procs = map[string]*stdioProc{}
	p.mu.Unlock()
	for _, pr := range ready {
		pr.close()
	}
}

// close ends the session, which closes the server's stdin and waits for
// it to exit (then signals it).
func (pr *stdioProc) close() {
	pr.stop.Do(func() {
		if pr.cs != nil {
			_ = pr.cs.Close()
		}
	})
}

// stderrOf is the end of what cmd wrote to its stderr, when the launcher
// kept it, as a suffix for an error.
func stderrOf(cmd *exec.Cmd) string {
	t, ok := cmd.Stderr.(interface{ String() string })
	if !ok {
		return ""
	}
	if s := strings.TrimSpace(t.String()); s != "" {
		return "; its stderr ends: " + s
	}
	return ""
}
