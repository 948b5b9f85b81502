package modelproxy

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// FirstPort is the loopback port, inside a sandbox, of a pool's first
// proxy; each further proxy takes the next one, so a proxy's URL names it.
const FirstPort = 20000

// maxProxies bounds a pool's proxies (and the ports they take).
const maxProxies = 30000

// Pool keeps one proxy per tenant and upstream, each on its own unix
// socket under Dir and its own loopback port inside the sandboxes, and one
// Meter per chat. Each chat has its own placeholder on each proxy it uses:
// the proxy knows from it which chat a request is for, and a chat's
// placeholder is refused for any other tenant's credential (another
// proxy). The same chat and credential always get the same proxy, URL and
// placeholder, so a chat's warm agent process stays valid from one turn to
// the next. A chat idle for ChatTTL is forgotten: its placeholders are
// refused until its next turn routes it again.
type Pool struct {
	// Dir holds the sockets; it should be the worker's own (mode 0700).
	Dir string
	// Options apply to every proxy.
	Options Options
	// ChatTTL is how long a chat with no run and no request is kept;
	// zero means DefaultChatTTL.
	ChatTTL time.Duration

	mu     sync.Mutex
	secret []byte            // keys the placeholders
	by     map[string]*Route // tenant + upstream fingerprint
	byPort map[int]*Route
	chats  map[chatKey]*Meter
	swept  time.Time
}

// DefaultChatTTL is Pool.ChatTTL's default: longer than any warm process
// lives between turns.
const DefaultChatTTL = 6 * time.Hour

// chatKey names a chat: the same id in two tenants is two chats.
type chatKey struct{ tenant, chat string }

// Route is how an agent process reaches its provider through a proxy.
type Route struct {
	// URL is the proxy's base URL inside the sandbox.
	URL string
	// Port is the loopback port of URL; Socket the unix socket it is
	// bridged to.
	Port   int
	Socket string
	// Proxy holds the credential.
	Proxy *Proxy
}

// ChatRoute is a chat's way through a proxy: the Route, the placeholder
// the chat's processes present, and the chat's Meter.
type ChatRoute struct {
	*Route
	Token string
	Meter *Meter
}

// Route returns tenant's proxy of up, starting it on first use, and chat's
// placeholder on it. An empty chat is work of the tenant's that belongs to
// no chat (a structured generation, a catalog read): its usage is metered
// but never a run's.
func (p *Pool) Route(tenant, chat string, up Upstream) (ChatRoute, error) {
	h := sha256.New()
	for _, s := range []string{tenant, up.BaseURL, string(up.Scheme), up.Secret} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	key := hex.EncodeToString(h.Sum(nil)[:16])
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.by[key]
	if !ok {
		if len(p.by) >= maxProxies {
			return ChatRoute{}, fmt.Errorf("model proxy: %d proxies already run in this worker", maxProxies)
		}
		px, err := New(up, p.Options)
		if err != nil {
			return ChatRoute{}, err
		}
		port := FirstPort + len(p.by)
		sock := filepath.Join(p.Dir, "proxy-"+key[:20]+".sock")
		if err := px.Serve(sock); err != nil {
			return ChatRoute{}, err
		}
		r = &Route{URL: "http://127.0.0.1:" + strconv.Itoa(port), Port: port, Socket: sock, Proxy: px}
		if p.by == nil {
			p.by, p.byPort = map[string]*Route{}, map[int]*Route{}
		}
		p.by[key], p.byPort[port] = r, r
	}
	m := p.meterLocked(chatKey{tenant, chat})
	tok := p.token(tenant, chat, key)
	r.Proxy.Admit(tok, m)
	m.routed()
	return ChatRoute{Route: r, Token: tok, Meter: m}, nil
}

// Begin opens a run of tenant's chat on the chat's Meter (see Meter.Begin);
// Span.End closes it and returns what its chat's placeholders spent.
func (p *Pool) Begin(tenant, chat string) *Span {
	p.mu.Lock()
	m := p.meterLocked(chatKey{tenant, chat})
	p.mu.Unlock()
	return m.Begin()
}

// meterLocked returns the chat's Meter, making it on first use, after
// forgetting the chats idle for the TTL (at most once a minute); p.mu is
// held.
func (p *Pool) meterLocked(k chatKey) *Meter {
	now := time.Now()
	if now.Sub(p.swept) > time.Minute {
		p.swept = now
		ttl := cmp.Or(p.ChatTTL, DefaultChatTTL)
		for ck, m := range p.chats {
			if ck != k && m.idleSince(now.Add(-ttl)) {
				delete(p.chats, ck)
				for _, r := range p.by {
					r.Proxy.revoke(m)
				}
			}
		}
	}
	m, ok := p.chats[k]
	if !ok {
		if p.chats == nil {
			p.chats = map[chatKey]*Meter{}
		}
		m = &Meter{lastUsed: now}
		p.chats[k] = m
	}
	return m
}

// token is chat's placeholder on the proxy of key: a MAC of both under
// the pool's secret, so it is the same on every turn of the chat and no
// one without the secret can make another chat's.
func (p *Pool) token(tenant, chat, key string) string {
	if p.secret == nil {
		p.secret = make([]byte, 32)
		_, _ = rand.Read(p.secret)
	}
	mac := hmac.New(sha256.New, p.secret)
	for _, s := range []string{tenant, chat, key} {
		mac.Write([]byte(s))
		mac.Write([]byte{0})
	}
	return TokenPrefix + hex.EncodeToString(mac.Sum(nil)[:16])
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
	p.by, p.byPort, p.chats = nil, nil, nil
}

// logger is the pool's logger, never nil.
func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}
