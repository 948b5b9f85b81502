package ext

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"clopen.dev/pkg/platform/egress"
)

// publicClient reaches remote servers only at public addresses, checked on
// the address each connection is made to (so a name that resolves to a
// private address after it was saved is refused too), except for the
// hosts the operator allows.
func publicClient(allow []string) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		a, err := netip.ParseAddr(host)
		if err != nil {
			return err
		}
		if why := egress.NotPublic(a.Unmap()); why != "" {
			return fmt.Errorf("MCP server address %s is %s; only public addresses are reached unless the operator allows the host", a, why)
		}
		return nil
	}}
	plain := &net.Dialer{Timeout: 10 * time.Second}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		if slices.Contains(allow, strings.ToLower(host)) {
			return plain.DialContext(ctx, network, addr)
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: t}
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// withHeaders sets a server's configured headers on every request to it.
type withHeaders struct {
	base    http.RoundTripper
	headers map[string]string
}

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(w.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range w.headers {
			r.Header.Set(k, v)
		}
	}
	return w.base.RoundTrip(r)
}
