package mcpoauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"clopen.dev/pkg/platform/egress"
)

// newTransport is the transport of the default HTTP client. Every URL it
// reaches came from a remote server's metadata, so it dials only public
// addresses, unless the host is one the operator allows: without that, a
// hostile MCP server could make Clopen fetch https://10.0.0.5/ or the
// cloud metadata endpoint. The name is resolved once and the checked
// address dialled, so a second lookup cannot answer differently. It uses
// no proxy: the check is of the address really connected to.
func newTransport(e Endpoints) *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if e.Allow != nil && e.Allow(host) {
			return d.DialContext(ctx, network, addr)
		}
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			if why := egress.NotPublic(ip); why != "" {
				return nil, fmt.Errorf("%w: %s is %s, and not a host the operator allows", ErrMetadata, host, why)
			}
		}
		var errs []error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
	return t
}
