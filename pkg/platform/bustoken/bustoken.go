// Package bustoken signs and verifies the tokens that say whom a service
// request on the bus acts for. A service never takes a tenant from a
// request body: it takes it from a token signed by the one service entitled
// to vouch for it.
//
// There are three kinds. A caller token is signed by the gateway for the
// principal it authenticated, per request, and lives a couple of minutes. A
// dispatch token is signed by streammgr into each job it dispatches; it
// binds the tenant to the run, the engine and the account, and lives as
// long as a run may. An mcp token is signed by the worker running a run,
// afresh for every request the run's agent makes to the MCP bridge, and
// lives minutes: it binds the request to that run's tenant, project,
// session and MCP servers. Each kind has its own ed25519 key pair, so a
// holder of one signing key cannot make tokens of another kind.
//
// A token is base64url(JSON claims) "." base64url(ed25519 signature of the
// first part), both without padding.
package bustoken

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind is who signed a token and what it vouches for.
type Kind string

// The kinds.
const (
	Caller   Kind = "caller"   // the gateway, for an authenticated principal
	Dispatch Kind = "dispatch" // streammgr, for a run it dispatched
	MCP      Kind = "mcp"      // the worker, for one MCP request of a run it runs
)

// kinds are the kinds there are, in a stable order.
var kinds = []Kind{Caller, Dispatch, MCP}

// Lifetimes of the tokens the services sign.
const (
	// CallerTTL covers one gateway request and the service calls it makes.
	CallerTTL = 2 * time.Minute
	// DispatchTTL covers a run from its dispatch to its end: a job may
	// wait in the JOBS stream, be redelivered to another worker, and a run
	// may last hours. It is a day, with margin over any run's length.
	DispatchTTL = 25 * time.Hour
	// MCPTTL covers one MCP request from an agent to the bridge: the
	// worker signs one per request, so a token that leaked is soon dead.
	// A tool call the bridge is serving (a question the user answers
	// later) is not cut by its token expiring.
	MCPTTL = 5 * time.Minute
	// Skew is how far the signer's clock may be ahead of or behind the
	// verifier's.
	Skew = 30 * time.Second
)

// DispatchHeader is the HTTP header in which a worker's MCP proxy hands
// the MCP bridge the dispatch token of the run a request comes from, beside
// its mcp token: the bridge calls other services for the run with it (the
// run's external MCP servers are resolved only for a dispatch token of the
// run's project), after checking it names the mcp token's tenant, project
// and run.
const DispatchHeader = "X-Clopen-Dispatch"

// maxLen bounds a token: claims are a few hundred bytes.
const maxLen = 4096

// Claims are what a token vouches for. A caller token has the principal's
// fields; a dispatch token also has the run's.
type Claims struct {
	Kind     Kind   `json:"kind"`
	TenantID string `json:"tenantId"`
	UserID   string `json:"userId,omitempty"`
	UserName string `json:"userName,omitempty"`
	Role     string `json:"role,omitempty"`

	RunID     string `json:"runId,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	ProjectID string `json:"projectId,omitempty"`
	Engine    string `json:"engine,omitempty"`
	AccountID string `json:"accountId,omitempty"`
	// Servers are the slugs of the external MCP servers an mcp token's run
	// may reach.
	Servers []string `json:"servers,omitempty"`

	IssuedAt  int64 `json:"iat"` // Unix seconds
	ExpiresAt int64 `json:"exp"` // Unix seconds
}

// ErrInvalid is what every refusal of Verify matches: the message says why.
var ErrInvalid = errors.New("invalid token")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Signer signs tokens of one kind. It is safe for concurrent use.
type Signer struct {
	kind Kind
	key  ed25519.PrivateKey
	ttl  time.Duration
	now  func() time.Time
}

// NewSigner returns a Signer of kind with key, whose tokens live ttl.
func NewSigner(kind Kind, key ed25519.PrivateKey, ttl time.Duration) (*Signer, error) {
	if !slices.Contains(kinds, kind) {
		return nil, fmt.Errorf("bustoken: unknown kind %q", kind)
	}
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("bustoken: %s signing key: want %d bytes, got %d", kind, ed25519.PrivateKeySize, len(key))
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("bustoken: %s token lifetime must be positive", kind)
	}
	return &Signer{kind: kind, key: key, ttl: ttl, now: time.Now}, nil
}

// Sign returns the token of c, with the signer's kind, issued now and
// expiring after the signer's lifetime (c's own Kind and times are
// overwritten). c needs a tenant.
func (s *Signer) Sign(c Claims) (string, error) { return s.SignAt(c, s.now()) }

// SignAt is Sign as of now.
func (s *Signer) SignAt(c Claims, now time.Time) (string, error) {
	if c.TenantID == "" {
		return "", fmt.Errorf("bustoken: a %s token needs a tenant", s.kind)
	}
	c.Kind, c.IssuedAt, c.ExpiresAt = s.kind, now.Unix(), now.Add(s.ttl).Unix()
	body, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("bustoken: encode claims: %w", err)
	}
	payload := base64.RawURLEncoding.EncodeToString(body)
	sig := ed25519.Sign(s.key, []byte(payload))
	tok := payload + "." + base64.RawURLEncoding.EncodeToString(sig)
	if len(tok) > maxLen {
		// Verify would refuse it: fail here, where the cause is known.
		return "", fmt.Errorf("bustoken: a %s token of %d bytes is longer than %d", s.kind, len(tok), maxLen)
	}
	return tok, nil
}

// Verifier checks tokens against the public key of each kind it knows. It
// is safe for concurrent use.
type Verifier struct {
	keys map[Kind]ed25519.PublicKey
	now  func() time.Time
}

// NewVerifier returns a Verifier of the kinds in keys; a nil key leaves
// that kind out (its tokens are refused).
func NewVerifier(keys map[Kind]ed25519.PublicKey) (*Verifier, error) {
	v := &Verifier{keys: map[Kind]ed25519.PublicKey{}, now: time.Now}
	for k, pub := range keys {
		if pub == nil {
			continue
		}
		if !slices.Contains(kinds, k) {
			return nil, fmt.Errorf("bustoken: unknown kind %q", k)
		}
		if len(pub) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("bustoken: %s public key: want %d bytes, got %d", k, ed25519.PublicKeySize, len(pub))
		}
		v.keys[k] = pub
	}
	return v, nil
}

// Kinds are the kinds v can verify.
func (v *Verifier) Kinds() []Kind {
	var out []Kind
	for _, k := range kinds {
		if v != nil && v.keys[k] != nil {
			out = append(out, k)
		}
	}
	return out
}

// Verify returns the claims of tok when it is well formed, signed by the
// key of its kind, of one of the kinds accept, issued no later than now
// and not expired (each with Skew of allowance). Every refusal matches
// ErrInvalid and says why.
func (v *Verifier) Verify(tok string, accept ...Kind) (Claims, error) {
	if tok == "" {
		return Claims{}, invalid("no token")
	}
	if len(tok) > maxLen {
		return Claims{}, invalid("longer than %d bytes", maxLen)
	}
	payload, sigPart, ok := strings.Cut(tok, ".")
	if !ok || strings.Contains(sigPart, ".") {
		return Claims{}, invalid("want claims.signature")
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, invalid("claims: not base64url")
	}
	sig, err := base64.RawURLEncoding.DecodeString(sigPart)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return Claims{}, invalid("signature: want %d bytes of base64url", ed25519.SignatureSize)
	}
	var c Claims
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil || dec.More() {
		return Claims{}, invalid("claims: not a JSON object of claims")
	}
	if !slices.Contains(accept, c.Kind) {
		return Claims{}, invalid("a %q token where %s is wanted", c.Kind, kindList(accept))
	}
	pub := v.keyOf(c.Kind)
	if pub == nil {
		return Claims{}, invalid("this service has no key to verify %s tokens", c.Kind)
	}
	if !ed25519.Verify(pub, []byte(payload), sig) {
		return Claims{}, invalid("bad signature")
	}
	now := v.now()
	switch {
	case c.TenantID == "":
		return Claims{}, invalid("no tenant")
	case c.ExpiresAt <= c.IssuedAt:
		return Claims{}, invalid("expires before it is issued")
	case time.Unix(c.IssuedAt, 0).After(now.Add(Skew)):
		return Claims{}, invalid("issued in the future")
	case !now.Add(-Skew).Before(time.Unix(c.ExpiresAt, 0)):
		return Claims{}, invalid("expired at %s", time.Unix(c.ExpiresAt, 0).UTC().Format(time.RFC3339))
	}
	return c, nil
}

func (v *Verifier) keyOf(k Kind) ed25519.PublicKey {
	if v == nil {
		return nil
	}
	return v.keys[k]
}

func kindList(kinds []Kind) string {
	if len(kinds) == 0 {
		return "no token"
	}
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(s, " or ")
}
