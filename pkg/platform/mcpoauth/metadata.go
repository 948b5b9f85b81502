package mcpoauth

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// ResourceMetadata is the part of an RFC 9728 protected-resource metadata
// document Clopen uses.
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// ServerMetadata is the part of an RFC 8414 authorization server metadata
// document (or an OpenID provider configuration) Clopen uses.
type ServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
}

// Endpoints decides which URLs Clopen may follow on a server's word.
// Everything must be https to a public address, except hosts the operator
// allows: they may resolve to loopback, private or link-local addresses,
// and a loopback one may be reached over plain http (an authorization
// server run next to Clopen in development or in tests).
type Endpoints struct {
	// Allow reports whether host (as in URL.Hostname: a name, or an
	// address without brackets) is one the operator trusts. Nil allows
	// none. Plain http needs a loopback host whatever it says.
	Allow func(host string) bool
}

// Check refuses a URL that is not absolute, carries credentials or a
// fragment, or is plain http to a host that is not an allowed loopback
// host. field names the URL in the error.
func (e Endpoints) Check(field, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMetadata, field, err)
	}
	if !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("%w: %s %q is not an absolute URL", ErrMetadata, field, raw)
	}
	if u.User != nil || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %s %q carries credentials or a fragment", ErrMetadata, field, raw)
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if isLoopback(u.Hostname()) && e.Allow != nil && e.Allow(u.Hostname()) {
			return u, nil
		}
		return nil, fmt.Errorf("%w: %s %q is plain http to a host not allowed", ErrMetadata, field, raw)
	}
	return nil, fmt.Errorf("%w: %s %q is not https", ErrMetadata, field, raw)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// ParseResourceMetadata decodes a protected-resource metadata document and
// checks it describes the MCP server at serverURL: its resource must be
// that URL or a path prefix of it on the same origin (RFC 9728 §3.3; a
// document for another resource is refused, else any server could send
// Clopen's client to an authorization server of its choosing for another
// resource), and its authorization servers must pass e.
func ParseResourceMetadata(data []byte, serverURL string, e Endpoints) (ResourceMetadata, error) {
	var m ResourceMetadata
	if err := json.Unmarshal(data, &m); err != nil {
		return ResourceMetadata{}, fmt.Errorf("%w: protected resource metadata: %v", ErrMetadata, err)
	}
	res, err := e.Check("resource", m.Resource)
	if err != nil {
		return ResourceMetadata{}, err
	}
	srv, err := url.Parse(serverURL)
	if err != nil {
		return ResourceMetadata{}, fmt.Errorf("%w: server url: %v", ErrMetadata, err)
	}
	if !covers(res, srv) {
		return ResourceMetadata{}, fmt.Errorf("%w: resource %q does not cover server %q", ErrMetadata, m.Resource, serverURL)
	}
	if len(m.AuthorizationServers) == 0 {
		return ResourceMetadata{}, fmt.Errorf("%w: protected resource metadata names no authorization server", ErrMetadata)
	}
	for _, as := range m.AuthorizationServers {
		if _, err := e.Check("authorization server", as); err != nil {
			return ResourceMetadata{}, err
		}
	}
	return m, nil
}

// covers reports whether the resource res names srv: same origin, and
// srv's path is res's path or below it.
func covers(res, srv *url.URL) bool {
	if !strings.EqualFold(res.Scheme, srv.Scheme) || !strings.EqualFold(res.Host, srv.Host) {
		return false
	}
	rp, sp := strings.TrimSuffix(res.EscapedPath(), "/"), strings.TrimSuffix(srv.EscapedPath(), "/")
	return sp == rp || strings.HasPrefix(sp, rp+"/")
}

// ParseServerMetadata decodes an authorization server's metadata and checks
// it may be used: its issuer is the one Clopen asked about (RFC 8414 §3.3),
// its endpoints pass e, it issues codes and it supports PKCE with S256,
// which Clopen requires.
func ParseServerMetadata(data []byte, issuer string, e Endpoints) (ServerMetadata, error) {
	var m ServerMetadata
	if err := json.Unmarshal(data, &m); err != nil {
		return ServerMetadata{}, fmt.Errorf("%w: authorization server metadata: %v", ErrMetadata, err)
	}
	if strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") || m.Issuer == "" {
		return ServerMetadata{}, fmt.Errorf("%w: issuer %q, want %q", ErrMetadata, m.Issuer, issuer)
	}
	if _, err := e.Check("authorization_endpoint", m.AuthorizationEndpoint); err != nil {
		return ServerMetadata{}, err
	}
	if _, err := e.Check("token_endpoint", m.TokenEndpoint); err != nil {
		return ServerMetadata{}, err
	}
	if m.RegistrationEndpoint != "" {
		if _, err := e.Check("registration_endpoint", m.RegistrationEndpoint); err != nil {
			return ServerMetadata{}, err
		}
	}
	if !slices.Contains(m.CodeChallengeMethodsSupported, "S256") {
		return ServerMetadata{}, fmt.Errorf("%w: no PKCE S256 in code_challenge_methods_supported %q", ErrMetadata, m.CodeChallengeMethodsSupported)
	}
	if len(m.ResponseTypesSupported) > 0 && !slices.Contains(m.ResponseTypesSupported, "code") {
		return ServerMetadata{}, fmt.Errorf("%w: response type code not supported", ErrMetadata)
	}
	return m, nil
}

// serverMetadataURLs lists where an issuer's metadata may be, in order: the
// RFC 8414 well-known URI with the issuer's path appended after it, then
// the OpenID configuration with the path inserted and appended.
func serverMetadataURLs(issuer *url.URL) []string {
	origin := issuer.Scheme + "://" + issuer.Host
	p := strings.TrimSuffix(issuer.EscapedPath(), "/")
	if p == "" {
		return []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p,
		origin + p + "/.well-known/openid-configuration",
	}
}

// resourceMetadataURLs lists the well-known places of a server's
// protected-resource metadata: with its path inserted, then at the root.
func resourceMetadataURLs(srv *url.URL) []string {
	origin := srv.Scheme + "://" + srv.Host
	root := origin + "/.well-known/oauth-protected-resource"
	if p := strings.TrimSuffix(srv.EscapedPath(), "/"); p != "" {
		return []string{root + p, root}
	}
	return []string{root}
}
