package egressproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestParseAllow(t *testing.T) {
	got, err := ParseAllow(EnvAllow, " registry.npmjs.org, GitHub.com:22 ,*.pypi.org,")
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{{Host: "registry.npmjs.org"}, {Host: "github.com", Port: 22}, {Host: "*.pypi.org"}}
	if len(got) != len(want) {
		t.Fatalf("ParseAllow = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rule %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"https://x.org", "x.org:0", "x.org:99999", "user@x.org", "*", "*.", "[::1]"} {
		if _, err := ParseAllow(EnvAllow, bad); err == nil {
			t.Errorf("ParseAllow(%q) = nil error", bad)
		}
	}
	p := &Proxy{Allow: want}
	for _, c := range []struct {
		host        string
		port, deflt int
		ok          bool
	}{
		{"registry.npmjs.org", 443, 443, true},
		{"registry.npmjs.org", 80, 80, true},
		{"registry.npmjs.org", 8443, 443, false},
		{"REGISTRY.npmjs.org.", 443, 443, true},
		{"evil-registry.npmjs.org", 443, 443, false},
		{"github.com", 22, 443, true},
		{"github.com", 443, 443, false},
		{"files.pypi.org", 443, 443, true},
		{"pypi.org", 443, 443, false},
		{"xpypi.org", 443, 443, false},
	} {
		if got := p.allowed(c.host, c.port, c.deflt); got != c.ok {
			t.Errorf("allowed(%s:%d) = %v, want %v", c.host, c.port, got, c.ok)
		}
	}
}

// proxyRequest sends one raw request to the proxy and returns its status
// line and body.
func proxyRequest(t *testing.T, addr, raw string) (string, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.Status, string(b)
}

// The real dialer refuses an allowed name that resolves to a non-public
// address, and a plain-http request goes only to an allowed host.
func TestProxyRefusesWhatTheListAndTheAddressDoNotAllow(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("upstream " + r.URL.Path)) }))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	portN, _ := strconv.Atoi(port)
	p := &Proxy{Allow: []Rule{{Host: "localhost", Port: portN}}}
	srv := httptest.NewServer(p)
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	status, body := proxyRequest(t, addr, "CONNECT localhost:"+port+" HTTP/1.1\r\nHost: localhost:"+port+"\r\n\r\n")
	if !strings.HasPrefix(status, "502") || !strings.Contains(body, "loopback") {
		t.Errorf("CONNECT to an allowed name on loopback = %s %q, want 502 naming loopback", status, body)
	}
	status, body = proxyRequest(t, addr, "CONNECT metadata.google.internal:443 HTTP/1.1\r\nHost: metadata.google.internal:443\r\n\r\n")
	if !strings.HasPrefix(status, "403") || !strings.Contains(body, EnvAllow) {
		t.Errorf("CONNECT to a host not allowed = %s %q, want 403 naming %s", status, body, EnvAllow)
	}
	status, _ = proxyRequest(t, addr, "GET http://evil.example/x HTTP/1.1\r\nHost: evil.example\r\n\r\n")
	if !strings.HasPrefix(status, "403") {
		t.Errorf("http to a host not allowed = %s, want 403", status)
	}
	status, _ = proxyRequest(t, addr, "GET /x HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if !strings.HasPrefix(status, "400") {
		t.Errorf("a request that is not a proxy request = %s, want 400", status)
	}

	// With a dialer that may reach the test server, plain http is forwarded.
	p.Dial = func(ctx context.Context, network, a string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, a)
	}
	status, body = proxyRequest(t, addr, "GET http://localhost:"+port+"/pkg HTTP/1.1\r\nHost: localhost:"+port+"\r\nProxy-Authorization: x\r\n\r\n")
	if !strings.HasPrefix(status, "200") || body != "upstream /pkg" {
		t.Errorf("http to an allowed host = %s %q", status, body)
	}
}

// FuzzParseAllow reads allow-lists as an operator writes them: an entry
// either parses to a rule with a host and a valid port, or is an error.
func FuzzParseAllow(f *testing.F) {
	for _, s := range []string{"registry.npmjs.org", "a.b:22,*.c.d", "x:0", "*", "[::1]:80", " , "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rules, err := ParseAllow(EnvAllow, s)
		if err != nil {
			return
		}
		for _, r := range rules {
			if r.Host == "" || r.Port < 0 || r.Port > 65535 || strings.Contains(r.Host, ",") {
				t.Fatalf("ParseAllow(%q) gave %+v", s, r)
			}
		}
	})
}
