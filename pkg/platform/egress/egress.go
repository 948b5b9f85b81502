// Package egress decides which model endpoints a tenant may point an
// engine at. A provider's URL is the tenant's to choose, and the worker
// connects to it, so without a check a tenant could make the worker reach
// its own loopback services, the private network or a cloud metadata
// endpoint. The policy is https to public addresses; an operator's
// allow-list admits named hosts over http or on private addresses (a model
// server on the same network, a local mock in development).
package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Policy is the set of hosts besides public https endpoints a provider URL
// may name.
type Policy struct {
	// Allow lists hosts ("llm.internal", "127.0.0.1", "[::1]") that may be
	// reached over http and on private, loopback or link-local addresses.
	Allow []string
	// Resolver looks names up; nil is net.DefaultResolver.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
}

// EnvAllow lists, comma-separated, the hosts a provider URL may name over
// plain http or on a private, loopback or link-local address.
const EnvAllow = "CLOPEN_PROVIDER_ALLOW"

// ParseAllow reads a comma-separated allow-list (CLOPEN_PROVIDER_ALLOW).
func ParseAllow(v string) []string {
	var out []string
	for _, h := range strings.Split(v, ",") {
		if h = strings.ToLower(strings.Trim(strings.TrimSpace(h), "[]")); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// lookupTimeout bounds the name lookup of a check.
const lookupTimeout = 5 * time.Second

// CheckURL refuses a provider URL that is not an absolute http(s) URL, that
// carries credentials, that is plain http to a host not allowed, or whose
// host is or resolves to an address that is not public, unless allowed.
// An empty URL (the engine's own default endpoint) passes, and so does a
// name that does not resolve here. The error says which rule the URL broke.
// This is a check when the URL is saved; a name can resolve differently
// later, so the connection itself must be checked too (NotPublic).
func (p Policy) CheckURL(ctx context.Context, raw string) error {
	return p.CheckField(ctx, "apiUrl", raw)
}

// CheckField is CheckURL for a URL the request calls field: the error
// names it (an MCP server's "url", a provider's "apiUrl").
func (p Policy) CheckField(ctx context.Context, field, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s: %v", field, err)
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%s %q: want an https URL", field, raw)
	case host == "":
		return fmt.Errorf("%s %q: no host", field, raw)
	case u.User != nil:
		return fmt.Errorf("%s: credentials do not belong in the URL; put them in an account", field)
	}
	allowed := slices.Contains(p.Allow, host)
	if u.Scheme == "http" && !allowed {
		return fmt.Errorf("%s %q: plain http is allowed only to hosts the operator lists (CLOPEN_PROVIDER_ALLOW); use https", field, raw)
	}
	if allowed {
		return nil
	}
	addrs, err := p.addrs(ctx, host)
	if err != nil {
		// A name that does not resolve from here is not refused: the
		// endpoint may be reachable only where the engines run. What it
		// resolves to there is not checked by this.
		return nil
	}
	for _, a := range addrs {
		if why := NotPublic(a); why != "" {
			return fmt.Errorf("%s %q: %s is %s (%s); only public addresses may be used unless the operator allows the host", field, raw, host, why, a)
		}
	}
	return nil
}

func (p Policy) addrs(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return []netip.Addr{netip.IPv6Loopback()}, nil
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("no address")
	}
	return addrs, err
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598),
// private in all but name.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// NotPublic says what kind of non-public address a is ("loopback",
// "private", …), or "" for a public unicast address.
func NotPublic(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsLinkLocalUnicast():
		return "a link-local address (cloud metadata lives there)"
	case a.IsPrivate(), cgnat.Contains(a):
		return "a private address"
	case !a.IsGlobalUnicast():
		return "not a unicast address"
	}
	return ""
}
