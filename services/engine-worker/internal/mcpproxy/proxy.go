// Package mcpproxy lets a run's agent reach the MCP bridge without ever
// holding a token.
//
// Every agent process can reach one endpoint: in the sandbox a loopback
// port bridged to the proxy's unix socket, unconfined a loopback TCP
// port. A run is given the URL /run/<key>/mcp on it, where key is a secret
// of its chat session on this worker (an HMAC under the proxy's random
// secret: the same for every turn of the session, so a warm agent process
// keeps its configuration), valid only while a run of the session is
// registered. The proxy
// forwards each request under that path to the bridge's /mcp with a fresh
// mcp token (bustoken.MCP, minutes long) for the run, replacing whatever
// Authorization the agent sent; /run/<key>/mcp/ext/<slug>, the run's
// external server slug, goes to the bridge's /mcp/ext/<slug> with the
// run's dispatch token beside it (bustoken.DispatchHeader), which the
// bridge resolves the server with. Every other path is refused. Once the run ends its key is forgotten: a
// request with it is refused here, and a token taken from the traffic is
// refused by the bridge (its run is no longer live) and soon expires.
package mcpproxy

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/sandbox"
)

// Port is the loopback port inside every sandbox where the proxy listens.
const Port = 3129

// Proxy forwards runs' MCP requests to the bridge. Serve starts it on a
// listener; Configure points it at the bridge; Register gives a run its
// URL.
type Proxy struct {
	// port is the one the agents dial: Port in a sandbox, the TCP
	// listener's own unconfined.
	port     int
	endpoint *sandbox.Endpoint

	secret []byte // keys the sessions' URLs

	mu     sync.Mutex
	bridge *url.URL
	signer *bustoken.Signer
	runs   map[string]registered // by key
}

// registered is a run the proxy forwards for: the claims of its mcp
// tokens and its dispatch token.
type registered struct {
	claims   bustoken.Claims
	dispatch string
}

// Listen makes the proxy of confined agents: it serves on a unix socket
// under dir, which every sandbox bridges to Port.
func Listen(dir string) (*Proxy, error) {
	sock := dir + "/mcp.sock"
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("mcp proxy: %w", err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("mcp proxy: %w", err)
	}
	p := &Proxy{port: Port, endpoint: &sandbox.Endpoint{Port: Port, Socket: sock}, secret: newSecret()}
	go p.serve(ln)
	return p, nil
}

// ListenLoopback makes the proxy of unconfined agents, on a loopback TCP
// port of its own.
func ListenLoopback() (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mcp proxy: %w", err)
	}
	p := &Proxy{port: ln.Addr().(*net.TCPAddr).Port, secret: newSecret()}
	go p.serve(ln)
	return p, nil
}

func newSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand does not fail
	return b
}

func (p *Proxy) serve(ln net.Listener) {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	_ = srv.Serve(ln)
}

// Endpoint is what a sandbox mounts to reach the proxy; nil for the
// loopback proxy.
func (p *Proxy) Endpoint() *sandbox.Endpoint {
	if p == nil {
		return nil
	}
	return p.endpoint
}

// Configure points the proxy at the bridge's base URL and signs its
// tokens with signer.
func (p *Proxy) Configure(bridge string, signer *bustoken.Signer) error {
	u, err := url.Parse(bridge)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("MCP bridge URL %q: want http(s)://host[:port]", bridge)
	}
	if signer == nil {
		return errors.New("mcp proxy: no signer")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bridge, p.signer = u, signer
	return nil
}

// Configured says whether runs can be given the bridge.
func (p *Proxy) Configured() bool {
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bridge != nil
}

// Register gives the run c names its URL for the bridge's internal tools
// until remove; runURL + "/ext/" + slug is its URL for the external server
// slug. dispatch is the run's dispatch token, which the bridge needs to
// resolve its external servers.
func (p *Proxy) Register(c bustoken.Claims, dispatch string) (runURL string, remove func()) {
	mac := hmac.New(sha256.New, p.secret)
	mac.Write([]byte(c.TenantID + "\x00" + c.SessionID))
	key := hex.EncodeToString(mac.Sum(nil))
	p.mu.Lock()
	if p.runs == nil {
		p.runs = map[string]registered{}
	}
	p.runs[key] = registered{claims: c, dispatch: dispatch}
	p.mu.Unlock()
	return "http://127.0.0.1:" + strconv.Itoa(p.port) + "/run/" + key + "/mcp", func() {
		p.mu.Lock()
		if p.runs[key].claims.RunID == c.RunID {
			delete(p.runs, key)
		}
		p.mu.Unlock()
	}
}

// ServeHTTP forwards /run/<key>/mcp and /run/<key>/mcp/ext/<slug> to the
// bridge's /mcp and /mcp/ext/<slug> with a fresh token of the key's run.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/run/")
	if !ok {
		refuse(w, errNotRunning.Error())
		return
	}
	key, sub, _ := strings.Cut(rest, "/")
	t, err := p.target(key, sub)
	if err != nil {
		refuse(w, err.Error())
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(t.url)
			pr.Out.URL.Path, pr.Out.URL.RawPath = t.url.Path, ""
			t.authorize(pr.Out.Header)
		},
		// A streamed answer (server-sent events) goes out as it comes.
		FlushInterval: -1,
	}
	rp.ServeHTTP(w, r)
}

var errNotRunning = errors.New("this run is not running, or the path is not one of its MCP servers")

// forward is where a run's request for one of its servers goes: the
// bridge's URL of the server and the run's tokens for it.
type forward struct {
	url      *url.URL
	token    string
	dispatch string // only for an external server
}

// authorize puts f's tokens on h in place of any there.
func (f forward) authorize(h http.Header) {
	h.Set("Authorization", "Bearer "+f.token)
	h.Del(bustoken.DispatchHeader)
	if f.dispatch != "" {
		h.Set(bustoken.DispatchHeader, f.dispatch)
	}
}

// target is the forward of the run of key for sub, "mcp" or
// "mcp/ext/<slug>", with a fresh mcp token.
func (p *Proxy) target(key, sub string) (forward, error) {
	p.mu.Lock()
	run, known := p.runs[key]
	bridge, signer := p.bridge, p.signer
	p.mu.Unlock()
	slug, external := strings.CutPrefix(sub, "mcp/ext/")
	if external && (slug == "" || strings.Contains(slug, "/")) {
		external = false
	}
	if !known || bridge == nil || path.Clean("/"+sub) != "/"+sub || (sub != "mcp" && !external) {
		return forward{}, errNotRunning
	}
	tok, err := signer.Sign(run.claims)
	if err != nil {
		return forward{}, fmt.Errorf("no token for this run: %w", err)
	}
	u := *bridge
	u.Path = strings.TrimSuffix(bridge.Path, "/") + "/" + sub
	f := forward{url: &u, token: tok}
	if external {
		f.dispatch = run.dispatch
	}
	return f, nil
}

// Tools lists the names of the tools the server slug ("" for Clopen's
// own) offers the run that runURL (from Register) belongs to, as its agent
// sees them through the bridge. It goes to the bridge directly, with the
// tokens a request of the agent's would get, while the run is registered.
func (p *Proxy) Tools(ctx context.Context, runURL, slug string) ([]string, error) {
	u, err := url.Parse(runURL)
	if err != nil {
		return nil, err
	}
	rest, ok := strings.CutPrefix(u.Path, "/run/")
	key, sub, _ := strings.Cut(rest, "/")
	if !ok || sub != "mcp" {
		return nil, fmt.Errorf("mcp proxy: %q is not a run's URL", runURL)
	}
	if slug != "" {
		sub += "/ext/" + slug
	}
	t, err := p.target(key, sub)
	if err != nil {
		return nil, err
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "clopen-worker", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: t.url.String(), MaxRetries: -1,
		HTTPClient: &http.Client{Transport: authorized{t}}}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", cmp.Or(slug, "clopen"), err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: tools/list: %w", cmp.Or(slug, "clopen"), err)
		}
		names = append(names, tool.Name)
	}
	return names, nil
}

// authorized sends every request with a forward's tokens.
type authorized struct{ f forward }

func (a authorized) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	a.f.authorize(r.Header)
	return http.DefaultTransport.RoundTrip(r)
}

// refuse answers 401 with a JSON-RPC error, as the bridge does.
func refuse(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32001, "message": why}})
}
