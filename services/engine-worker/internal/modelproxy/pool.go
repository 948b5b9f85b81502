package modelproxy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
)

// FirstPort is the loopback port, inside a sandbox, of a pool's first
// proxy; each further proxy takes the next one, so a proxy's URL names it.
const FirstPort = 20000

// maxProxies bounds a pool's proxies (and the ports they take).
const maxProxies = 30000

// Pool keeps one proxy per tenant and upstream, each on its own unix
// socket under Dir and its own loopback port inside the sandboxes. The same
// tenant and credential always get the same proxy, URL and placeholder, so
// warm agent processes stay valid from one turn to the next.
type Pool struct {
	// Dir holds the sockets; it should be the worker's own (mode 0700).
	Dir string
	// Options apply to every proxy.
	Options Options

	mu     sync.Mutex
	by     map[string]*Route // tenant + upstream fingerprint
	byPort map[int]*Route
}

// Route is how an agent process reaches its provider through a proxy.
type Route struct {
	// URL is the proxy's base URL inside the sandbox.
	URL string
	// Port is the loopback port of URL; Socket the unix socket it is
	// bridged to.
	Port   int
	Socket string
	// Proxy holds the credential, the placeholder (Proxy.Token) and the
	// usage (Proxy.Meter).
	Proxy *Proxy
}

// Route returns tenant's proxy of up, starting it on first use.
func (p *Pool) Route(tenant string, up Upstream) (*Route, error) {
	h := sha256.New()
	for _, s := range []string{tenant, up.BaseURL, string(up.Scheme), up.Secret} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	key := hex.EncodeToString(h.Sum(nil)[:16])
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.by[key]; ok {
		return r, nil
	}
	if len(p.by) >= maxProxies {
		return nil, fmt.Errorf("model proxy: %d proxies already run in this worker", maxProxies)
	}
	px, err := New(up, p.Options)
	if err != nil {
		return nil, err
	}
	port := FirstPort + len(p.by)
	sock := filepath.Join(p.Dir, "proxy-"+key[:20]+".sock")
	if err := px.Serve(sock); err != nil {
		return nil, err
	}
	r := &Route{URL: "http://127.0.0.1:" + strconv.Itoa(port), Port: port, Socket: sock, Proxy: px}
	if p.by == nil {
		p.by, p.byPort = map[string]*Route{}, map[int]*Route{}
	}
	p.by[key], p.byPort[port] = r, r
	return r, nil
}

// Lookup returns the route whose URL baseURL is (the prefix of), if any.
func (p *Pool) Lookup(baseURL string) (*Route, bool) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() != "127.0.0.1" {
		return nil, false
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.byPort[port]
	return r, ok
}

// Close stops every proxy.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.by {
		_ = r.Proxy.Close()
	}
	p.by, p.byPort = nil, nil
}

// logger is the pool's logger, never nil.
func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}
