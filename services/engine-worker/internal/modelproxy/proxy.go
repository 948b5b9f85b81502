// Package modelproxy keeps model-API credentials out of agent processes.
//
// A confined agent is pointed at a Proxy (a unix socket on the worker,
// mounted into its sandbox as a loopback port) with a placeholder token in
// place of its key. The proxy accepts only requests that carry that
// placeholder, replaces it with the real credential in the provider's
// scheme and forwards the request to the provider's base URL, streaming
// the response back unchanged. The connection to the provider is checked
// when it is made: a name that resolves to a loopback, private, link-local
// (cloud metadata) or otherwise non-public address is refused unless the
// operator allows the host. On the way back the proxy counts the tokens
// each response reports on the Meter of the placeholder it was sent with:
// each chat has a placeholder of its own (see Pool), so a run's usage is
// what its chat's placeholder spent while it ran (see Span).
package modelproxy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"clopen.dev/pkg/platform/egress"
)

// Scheme is how a provider takes its credential.
type Scheme string

const (
	// AnthropicKey is Anthropic's API key: x-api-key.
	AnthropicKey Scheme = "anthropic-key"
	// AnthropicOAuth is a Claude subscription token (`claude setup-token`):
	// Authorization: Bearer, with the OAuth beta flag.
	AnthropicOAuth Scheme = "anthropic-oauth"
	// Bearer is OpenAI's and every OpenAI-compatible API's:
	// Authorization: Bearer.
	Bearer Scheme = "bearer"
	// Google is the Gemini API's: x-goog-api-key.
	Google Scheme = "google"
)

// oauthBeta is the anthropic-beta flag the Messages API wants with an
// OAuth token.
const oauthBeta = "oauth-2025-04-20"

// TokenPrefix starts every placeholder token, so one is recognisable in a
// log or an agent's settings.
const TokenPrefix = "sk-clopen-proxy-"

// Upstream is the provider a proxy forwards to and the credential it adds.
type Upstream struct {
	// BaseURL is the provider's base URL; its path is kept as the prefix of
	// every request's.
	BaseURL string
	Scheme  Scheme
	// Secret is the real credential; empty forwards with none (a local
	// model server that wants no key).
	Secret string
}

// Proxy is one upstream's proxy. It is an http.Handler; Serve serves it on
// a listener.
type Proxy struct {
	up     Upstream
	base   *url.URL
	rp     *httputil.ReverseProxy
	log    *slog.Logger
	server *http.Server

	mu     sync.Mutex
	tokens map[[sha256.Size]byte]*Meter // by the placeholder's hash
}

// Options are what a proxy may reach and where it logs.
type Options struct {
	// Allow lists the hosts (egress.Policy.Allow) the proxy may reach over
	// plain http and on non-public addresses: a model server on the
	// worker's own network, fakellm in development.
	Allow []string
	// Logger gets failures to reach the provider; nil discards them.
	Logger *slog.Logger
}

// New returns the proxy of up. Its base URL must be an http(s) URL with no
// credentials in it, and plain http only to an allowed host.
func New(up Upstream, opt Options) (*Proxy, error) {
	base, err := url.Parse(up.BaseURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("model proxy: base URL %q: want an absolute http(s) URL", up.BaseURL)
	}
	if base.User != nil {
		return nil, fmt.Errorf("model proxy: base URL: credentials do not belong in the URL")
	}
	allow := egress.ParseAllow(strings.Join(opt.Allow, ","))
	if base.Scheme == "http" && !slices.Contains(allow, strings.ToLower(base.Hostname())) {
		return nil, fmt.Errorf("model proxy: base URL %q: plain http only to hosts the operator allows (%s)", up.BaseURL, egress.EnvAllow)
	}
	switch up.Scheme {
	case AnthropicKey, AnthropicOAuth, Bearer, Google:
	default:
		return nil, fmt.Errorf("model proxy: unknown credential scheme %q", up.Scheme)
	}
	p := &Proxy{up: up, base: base, log: opt.logger(), tokens: map[[sha256.Size]byte]*Meter{}}
	base.RawQuery, base.Fragment = "", ""
	p.rp = &httputil.ReverseProxy{
		Rewrite:       p.rewrite,
		FlushInterval: -1, // event streams pass through as they come
		Transport:     transport(allow),
		ErrorHandler:  p.upstreamError,
		ErrorLog:      slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
	return p, nil
}

// NewToken returns a new random placeholder.
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return TokenPrefix + hex.EncodeToString(b)
}

// Admit makes token a placeholder the proxy accepts, whose responses m
// counts. Admitting a token again moves it to m.
func (p *Proxy) Admit(token string, m *Meter) {
	p.mu.Lock()
	p.tokens[sha256.Sum256([]byte(token))] = m
	p.mu.Unlock()
}

// revoke stops accepting the placeholders that m counts.
func (p *Proxy) revoke(m *Meter) {
	p.mu.Lock()
	maps.DeleteFunc(p.tokens, func(_ [sha256.Size]byte, v *Meter) bool { return v == m })
	p.mu.Unlock()
}

// ServeHTTP checks the placeholder and forwards the request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := p.meterOf(r)
	if m == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"clopen model proxy: the request does not carry a proxy token of this chat; the agent's credential is the placeholder it was given, never a key of its own"}}`+"\n")
		return
	}
	rec := m.begin()
	call := p.callSpan(r, rec)
	// Deferred: a response the provider broke off mid-stream (the reverse
	// proxy then aborts the handler with a panic) counts as far as it got.
	defer func() {
		u, ok := rec.done()
		m.finish(rec, u, ok)
		endCall(call, rec.status, u, ok)
	}()
	p.rp.ServeHTTP(&meteredWriter{ResponseWriter: w, rec: rec}, r)
}

// presented returns every credential the request carries, in any scheme.
func presented(r *http.Request) []string {
	var out []string
	for _, h := range []string{"X-Api-Key", "X-Goog-Api-Key"} {
		out = append(out, r.Header.Values(h)...)
	}
	for _, v := range r.Header.Values("Authorization") {
		if t, ok := strings.CutPrefix(v, "Bearer "); ok {
			v = t
		}
		out = append(out, strings.TrimSpace(v))
	}
	return append(out, r.URL.Query()["key"]...)
}

// meterOf returns the Meter of the placeholder the request carries, or
// nil when it carries none, one the proxy does not know, or another
// credential beside it. Placeholders are looked up by their SHA-256, so
// the time a look-up takes says nothing of how much of one was guessed.
func (p *Proxy) meterOf(r *http.Request) *Meter {
	creds := presented(r)
	if len(creds) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var m *Meter
	for i, c := range creds {
		got := p.tokens[sha256.Sum256([]byte(c))]
		if got == nil || (i > 0 && got != m) {
			return nil
		}
		m = got
	}
	return m
}

// rewrite points the request at the provider and swaps the placeholder for
// the credential.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.base)
	out := pr.Out
	for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
		out.Header.Del(h)
	}
	if q := out.URL.Query(); q.Has("key") {
		q.Del("key")
		out.URL.RawQuery = q.Encode()
	}
	// The transport asks for gzip itself and hands back the plain body,
	// which the meter reads.
	out.Header.Del("Accept-Encoding")
	if p.up.Secret == "" {
		return
	}
	switch p.up.Scheme {
	case AnthropicKey:
		out.Header.Set("X-Api-Key", p.up.Secret)
	case AnthropicOAuth:
		out.Header.Set("Authorization", "Bearer "+p.up.Secret)
		if !slices.ContainsFunc(out.Header.Values("Anthropic-Beta"), func(v string) bool { return strings.Contains(v, oauthBeta) }) {
			out.Header.Add("Anthropic-Beta", oauthBeta)
		}
	case Bearer:
		out.Header.Set("Authorization", "Bearer "+p.up.Secret)
	case Google:
		out.Header.Set("X-Goog-Api-Key", p.up.Secret)
	}
}

// upstreamError answers a request the provider could not be reached for.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	p.log.Warn("model proxy: provider unreachable", "host", p.base.Host, "err", err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	msg := strings.ReplaceAll(fmt.Sprintf("clopen model proxy: %s: %v", p.base.Host, err), `"`, `'`)
	_, _ = io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"`+msg+`"}}`+"\n")
}

// meteredWriter reads the usage of a successful JSON or event-stream
// response as it is written back to the agent.
type meteredWriter struct {
	http.ResponseWriter
	rec *metered
}

func (w *meteredWriter) WriteHeader(code int) {
	w.rec.status = code
	w.rec.failed(code)
	if code/100 == 2 {
		mt, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type"))
		if mt == "text/event-stream" || mt == "application/json" {
			w.rec.mu.Lock()
			w.rec.s = &scanner{stream: mt == "text/event-stream"}
			w.rec.mu.Unlock()
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *meteredWriter) Write(p []byte) (int, error) {
	w.rec.write(p)
	return w.ResponseWriter.Write(p)
}

// Flush passes each event on as it comes (FlushInterval -1).
func (w *meteredWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *meteredWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// transport connects to providers, refusing at connect time an address
// that is not public unless its host is allowed: the name is resolved when
// the connection is made, so what was checked when the URL was saved
// cannot be changed under the check.
func transport(allow []string) *http.Transport {
	checked := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseNotPublic}
	open := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if slices.Contains(allow, strings.ToLower(strings.Trim(host, "[]"))) {
				return open.DialContext(ctx, network, addr)
			}
			return checked.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// refuseNotPublic is the dialer's check of the address it is about to
// connect to.
func refuseNotPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("model proxy: connect to %s: %w", address, err)
	}
	if why := egress.NotPublic(ap.Addr()); why != "" {
		return fmt.Errorf("model proxy: refusing to connect to %s: %s; only public addresses may be reached unless the operator allows the host (%s)", ap.Addr(), why, egress.EnvAllow)
	}
	return nil
}

// Serve serves the proxy on a unix socket at path (replacing a stale one),
// readable and writable by the sandboxes it is mounted into, until Close.
func (p *Proxy) Serve(path string) error {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("model proxy: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return fmt.Errorf("model proxy: %w", err)
	}
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.server.Serve(ln) }()
	return nil
}

// Close stops serving.
func (p *Proxy) Close() error {
	if p.server == nil {
		return nil
	}
	return p.server.Close()
}
