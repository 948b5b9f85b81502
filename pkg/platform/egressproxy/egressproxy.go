// Package egressproxy is the one way out of a sandbox besides the
// endpoints it was given: an HTTP forward proxy that reaches only the
// destinations the operator allows (package registries, git hosts, the
// APIs a tenant's stdio MCP server calls). Agents' allow-list is
// CLOPEN_SANDBOX_ALLOW, read by the worker; stdio MCP servers' is
// CLOPEN_MCP_STDIO_ALLOW, read by the MCP bridge. Each serves it on a unix
// socket that its sandboxes mount as a loopback port, and points the
// confined process at it with HTTPS_PROXY and HTTP_PROXY.
//
// HTTPS goes through CONNECT, so the proxy sees the host and port, never
// the traffic. Plain http is forwarded for allowed hosts. Every destination
// is checked twice: its name against the allow-list, then, when it
// connects, the address it resolved to must be public (no loopback,
// private, link-local or metadata address), so an allowed name that
// resolves to the host's own network is refused too.
package egressproxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"clopen.dev/pkg/platform/egress"
	"clopen.dev/pkg/platform/sandbox"
)

// EnvAllow lists, comma-separated, the destinations agents may reach:
// host (https on 443, http on 80) or host:port; "*.example.com" allows
// every subdomain of example.com.
const EnvAllow = "CLOPEN_SANDBOX_ALLOW"

// EnvAllowMCPStdio is the same list for tenants' stdio MCP servers, which
// the MCP bridge runs.
const EnvAllowMCPStdio = "CLOPEN_MCP_STDIO_ALLOW"

// Rule is one allowed destination.
type Rule struct {
	Host string // lower case; a leading "*." matches any subdomain
	Port int    // 0: 443 for CONNECT, 80 for http
}

// ParseAllow reads the allow-list of the variable name; an entry that is
// not a host or host:port is an error naming both.
func ParseAllow(name, v string) ([]Rule, error) {
	var out []Rule
	for _, f := range strings.Split(v, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		host, port := f, 0
		if h, p, err := net.SplitHostPort(f); err == nil {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("%s: %q: bad port", name, f)
			}
			host, port = h, n
		}
		name := strings.TrimPrefix(host, "*.")
		if name == "" || strings.ContainsAny(name, "/@*[]") || strings.Contains(name, "://") {
			return nil, fmt.Errorf("%s: %q: want host or host:port", name, f)
		}
		out = append(out, Rule{Host: host, Port: port})
	}
	return out, nil
}

func (r Rule) allows(host string, port, defaultPort int) bool {
	want := r.Port
	if want == 0 {
		want = defaultPort
	}
	if port != want {
		return false
	}
	if sub, ok := strings.CutPrefix(r.Host, "*."); ok {
		return strings.HasSuffix(host, "."+sub)
	}
	return host == r.Host
}

// Proxy is the forward proxy. The zero value refuses everything.
type Proxy struct {
	Allow []Rule
	// Dial connects to an allowed destination; nil means a net.Dialer that
	// refuses non-public addresses at connect time.
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	Logger *slog.Logger

	once      sync.Once
	transport *http.Transport
}

// dialTimeout bounds a connection to a destination.
const dialTimeout = 10 * time.Second

func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if p.Dial != nil {
		return p.Dial(ctx, network, addr)
	}
	d := net.Dialer{Timeout: dialTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if kind := egress.NotPublic(ap.Addr().Unmap()); kind != "" {
			return fmt.Errorf("%s resolves to a %s address", addr, kind)
		}
		return nil
	}}
	return d.DialContext(ctx, network, addr)
}

func (p *Proxy) log() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

// allowed says whether host:port may be reached, defaultPort being the
// scheme's.
func (p *Proxy) allowed(host string, port, defaultPort int) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, r := range p.Allow {
		if r.allows(host, port, defaultPort) {
			return true
		}
	}
	return false
}

// ServeSandboxes serves p on a new unix socket at sock, which sandboxes
// mount as 127.0.0.1:port, and returns that endpoint and the variables
// that point a confined process and its tools at it; stop closes the
// socket. The socket accepts any uid (mode 0666): only the sandboxes it is
// mounted in can see it.
func (p *Proxy) ServeSandboxes(sock string, port int) (_ sandbox.Endpoint, env []string, stop func(), _ error) {
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return sandbox.Endpoint{}, nil, nil, fmt.Errorf("egress proxy: %w", err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		ln.Close()
		return sandbox.Endpoint{}, nil, nil, fmt.Errorf("egress proxy: %w", err)
	}
	go func() { _ = p.Serve(ln) }()
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	env = []string{"HTTPS_PROXY=" + url, "https_proxy=" + url, "HTTP_PROXY=" + url, "http_proxy=" + url,
		"NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1", "NODE_USE_ENV_PROXY=1"}
	return sandbox.Endpoint{Port: port, Socket: sock}, env, func() { ln.Close() }, nil
}

// Serve answers proxy requests on ln until it is closed.
func (p *Proxy) Serve(ln net.Listener) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ConnContext: withPeer}
	return srv.Serve(ln)
}

type peerKey struct{}

// withPeer records the uid of the process on the other end of a unix
// socket (the tenant's sandbox uid), for the log.
func withPeer(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ctx
	}
	uid := -1
	_ = raw.Control(func(fd uintptr) {
		if cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED); err == nil {
			uid = int(cred.Uid)
		}
	})
	return context.WithValue(ctx, peerKey{}, uid)
}

func peer(ctx context.Context) int {
	if uid, ok := ctx.Value(peerKey{}).(int); ok {
		return uid
	}
	return -1
}

func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, status int, dest, why string) {
	p.log().WarnContext(r.Context(), "sandbox egress refused", "dest", dest, "uid", peer(r.Context()), "why", why)
	http.Error(w, "clopen sandbox: "+dest+": "+why, status)
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" {
		p.refuse(w, r, http.StatusBadRequest, r.URL.String(), "not a proxy request (use CONNECT for https, an absolute http:// URL otherwise)")
		return
	}
	host, port, err := hostPort(r.URL.Host, 80)
	if err != nil {
		p.refuse(w, r, http.StatusBadRequest, r.URL.Host, err.Error())
		return
	}
	dest := net.JoinHostPort(host, strconv.Itoa(port))
	if !p.allowed(host, port, 80) {
		p.refuse(w, r, http.StatusForbidden, dest, "not in the operator's allow-list ("+EnvAllow+")")
		return
	}
	p.once.Do(func() {
		p.transport = &http.Transport{DialContext: p.dial, Proxy: nil, MaxIdleConns: 16, IdleConnTimeout: 30 * time.Second}
	})
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Authorization")
	out.Header.Del("Proxy-Connection")
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		p.refuse(w, r, http.StatusBadGateway, dest, err.Error())
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := hostPort(r.Host, 0)
	if err != nil {
		p.refuse(w, r, http.StatusBadRequest, r.Host, err.Error())
		return
	}
	dest := net.JoinHostPort(host, strconv.Itoa(port))
	if !p.allowed(host, port, 443) {
		p.refuse(w, r, http.StatusForbidden, dest, "not in the operator's allow-list ("+EnvAllow+")")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), dialTimeout)
	up, err := p.dial(ctx, "tcp", dest)
	cancel()
	if err != nil {
		p.refuse(w, r, http.StatusBadGateway, dest, err.Error())
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		p.refuse(w, r, http.StatusInternalServerError, dest, "connection cannot be taken over")
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	p.log().InfoContext(r.Context(), "sandbox egress", "dest", dest, "uid", peer(r.Context()))
	_, _ = down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n"))
	go func() {
		defer up.Close()
		_, _ = io.Copy(up, buf) // what the client sent after its request
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(down, up)
	down.Close()
}

// hostPort splits a request's host[:port]; CONNECT (defaultPort 0) needs
// the port.
func hostPort(hp string, defaultPort int) (string, int, error) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		if defaultPort == 0 {
			return "", 0, fmt.Errorf("want host:port")
		}
		host, ps = hp, strconv.Itoa(defaultPort)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("bad destination %q", hp)
	}
	return strings.ToLower(host), port, nil
}
