package mcpoauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Server is everything Clopen keeps about one remote MCP server's
// authorization: where to send the user and where to redeem and refresh
// tokens, and the client it is known as there. Discover and Register fill
// it; the caller stores it with the Token (sealed: ClientSecret is a
// credential) and hands it back to Start and FreshToken.
type Server struct {
	// Resource is the MCP server's URL, sent as the RFC 8707 resource
	// parameter so tokens are minted for it alone.
	Resource              string   `json:"resource"`
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	RegistrationEndpoint  string   `json:"registration_endpoint,omitempty"`
	Scopes                []string `json:"scopes,omitempty"`
	ClientID              string   `json:"client_id,omitempty"`
	ClientSecret          Secret   `json:"client_secret,omitempty"`
}

// String describes srv with its client secret redacted.
func (s Server) String() string {
	return fmt.Sprintf("Server{resource=%s issuer=%s authorize=%s token=%s register=%s scopes=%q client=%s secret=%s}",
		s.Resource, s.Issuer, s.AuthorizationEndpoint, s.TokenEndpoint, s.RegistrationEndpoint, s.Scopes, s.ClientID, s.ClientSecret)
}

// LogValue redacts like String.
func (s Server) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Config is what a Client needs from its caller.
type Config struct {
	// RedirectURL is the callback the authorization server sends the user
	// back to: the gateway's GET /v1/mcp-oauth/callback as seen from the
	// user's browser. Required.
	RedirectURL string
	// StateKey signs the state parameter; at least 32 random bytes, the
	// same on every replica that serves the callback. Required.
	StateKey []byte
	// Pending keeps authorizations between Start and Complete. Required.
	Pending PendingStore
	// Endpoints decides which URLs discovery may follow.
	Endpoints Endpoints
	// ClientName is the name registered with dynamic registration, shown
	// on the consent screen; "Clopen" when empty.
	ClientName string
	// HTTPClient makes every request; nil is a client with a 30 s timeout
	// that dials only public addresses and hosts Endpoints allows. A
	// client given here keeps its own transport, and with it the duty to
	// refuse internal addresses.
	HTTPClient *http.Client
	// StateTTL bounds how long a user has to consent; 10 minutes when zero.
	StateTTL time.Duration
	// RefreshMargin is how close to expiry FreshToken refreshes; 2 minutes
	// when zero.
	RefreshMargin time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Client runs discovery, registration, the authorization code flow and
// refreshes for remote MCP servers. It holds no per-server state and is
// safe for concurrent use.
type Client struct {
	cfg Config
}

// minStateKey is the shortest state key New accepts.
const minStateKey = 32

// maxDocument bounds what is read of any response: metadata documents,
// registration answers.
const maxDocument = 1 << 20

// New checks cfg and fills its defaults.
func New(cfg Config) (*Client, error) {
	if u, err := url.Parse(cfg.RedirectURL); err != nil || !u.IsAbs() || u.Host == "" {
		return nil, fmt.Errorf("mcpoauth: redirect url %q is not an absolute URL", cfg.RedirectURL)
	}
	if len(cfg.StateKey) < minStateKey {
		return nil, fmt.Errorf("mcpoauth: state key has %d bytes, want at least %d", len(cfg.StateKey), minStateKey)
	}
	if cfg.Pending == nil {
		return nil, errors.New("mcpoauth: no pending store")
	}
	if cfg.ClientName == "" {
		cfg.ClientName = "Clopen"
	}
	hc := http.Client{Timeout: 30 * time.Second, Transport: newTransport(cfg.Endpoints)}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	// A redirect is held to the same rule as the URL that led to it, so an
	// https document cannot bounce Clopen to a plain http internal address.
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		_, err := cfg.Endpoints.Check("redirect", req.URL.String())
		return err
	}
	cfg.HTTPClient = &hc
	if cfg.StateTTL <= 0 {
		cfg.StateTTL = 10 * time.Minute
	}
	if cfg.RefreshMargin <= 0 {
		cfg.RefreshMargin = 2 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{cfg: cfg}, nil
}

// Discover finds how to authorize against the MCP server at serverURL.
// challenge is the WWW-Authenticate header of the server's 401 answer ("" if
// none): its resource_metadata URL is tried first, then the well-known
// protected-resource locations. When the server publishes no such metadata,
// its own origin is taken as the authorization server (the MCP 2025-03-26
// fallback). The authorization server's metadata must pass
// ParseServerMetadata. Errors wrap ErrMetadata or ErrUnreachable.
func (c *Client) Discover(ctx context.Context, serverURL, challenge string) (Server, error) {
	srv, err := c.cfg.Endpoints.Check("server url", serverURL)
	if err != nil {
		return Server{}, err
	}
	ch, _, err := ParseChallenge(challenge)
	if err != nil {
		return Server{}, fmt.Errorf("%w: %v", ErrMetadata, err)
	}
	candidates := resourceMetadataURLs(srv)
	if ch.ResourceMetadata != "" {
		if _, err := c.cfg.Endpoints.Check("resource_metadata", ch.ResourceMetadata); err != nil {
			return Server{}, err
		}
		candidates = append([]string{ch.ResourceMetadata}, candidates...)
	}
	out := Server{Resource: serverURL}
	rm, found, err := firstDocument(ctx, c, candidates, func(b []byte) (ResourceMetadata, error) {
		return ParseResourceMetadata(b, serverURL, c.cfg.Endpoints)
	})
	switch {
	case err != nil:
		return Server{}, err
	case found:
		out.Issuer = rm.AuthorizationServers[0]
		out.Scopes = rm.ScopesSupported
	default:
		out.Issuer = srv.Scheme + "://" + srv.Host
	}
	if ch.Scope != "" {
		out.Scopes = strings.Fields(ch.Scope)
	}
	issuer, err := url.Parse(out.Issuer)
	if err != nil {
		return Server{}, fmt.Errorf("%w: issuer: %v", ErrMetadata, err)
	}
	sm, found, err := firstDocument(ctx, c, serverMetadataURLs(issuer), func(b []byte) (ServerMetadata, error) {
		return ParseServerMetadata(b, out.Issuer, c.cfg.Endpoints)
	})
	if err != nil {
		return Server{}, err
	}
	if !found {
		return Server{}, fmt.Errorf("%w: no authorization server metadata for %s", ErrMetadata, out.Issuer)
	}
	out.AuthorizationEndpoint = sm.AuthorizationEndpoint
	out.TokenEndpoint = sm.TokenEndpoint
	out.RegistrationEndpoint = sm.RegistrationEndpoint
	if len(out.Scopes) == 0 {
		out.Scopes = sm.ScopesSupported
	}
	return out, nil
}

// initialize is the MCP request Challenge sends: the first one any client
// sends, which a protected server refuses without a token.
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
	`"capabilities":{},"clientInfo":{"name":"clopen","version":"1"}}}`

// Challenge sends the MCP server at serverURL an initialize request without
// credentials and returns the WWW-Authenticate header of its answer ("" when
// it names none, or does not refuse), for Discover. The URL is held to
// Endpoints like every other. Errors wrap ErrMetadata or ErrUnreachable.
func (c *Client) Challenge(ctx context.Context, serverURL string) (string, error) {
	if _, err := c.cfg.Endpoints.Check("server url", serverURL); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(initialize))
	if err != nil {
		return "", fmt.Errorf("%w: server url: %v", ErrMetadata, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST %s: %w: %v", req.URL.Redacted(), ErrUnreachable, err)
	}
	resp.Body.Close()
	return resp.Header.Get("WWW-Authenticate"), nil
}

// firstDocument fetches the URLs in order and parses the first one
// answered with 200. A URL answered otherwise is passed over; a document
// that does not parse or validate ends the search, because falling through
// to another would let a hostile answer be replaced by a guess.
func firstDocument[T any](ctx context.Context, c *Client, urls []string, parse func([]byte) (T, error)) (T, bool, error) {
	var zero T
	for _, u := range urls {
		body, status, err := c.get(ctx, u)
		if err != nil {
			return zero, false, err
		}
		if status != http.StatusOK {
			continue
		}
		v, err := parse(body)
		if err != nil {
			return zero, false, fmt.Errorf("%s: %w", u, err)
		}
		return v, true, nil
	}
	return zero, false, nil
}

// get fetches a JSON document; a network failure wraps ErrUnreachable.
func (c *Client) get(ctx context.Context, u string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %v", ErrMetadata, u, err)
	}
	req.Header.Set("Accept", "application/json")
	return c.do(req)
}

func (c *Client) do(req *http.Request) ([]byte, int, error) {
	resp, err := c.cfg.HTTPClient.Do(req)
	if errors.Is(err, ErrMetadata) { // a redirect or an address refused, not a failure
		return nil, 0, fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w: %v", req.Method, req.URL.Redacted(), ErrUnreachable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w: %v", req.Method, req.URL.Redacted(), ErrUnreachable, err)
	}
	return body, resp.StatusCode, nil
}
