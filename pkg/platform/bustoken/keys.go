package bustoken

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// Environment variables holding the keys, each the standard base64
// (RFC 4648, padded) of the raw key: a signing key is the 32-byte ed25519
// seed (RFC 8032's private key), a public key its 32 bytes.
const (
	EnvCallerKey      = "CLOPEN_CALLER_KEY"      // the gateway's
	EnvCallerPubKey   = "CLOPEN_CALLER_PUBKEY"   // every service serving the gateway
	EnvDispatchKey    = "CLOPEN_DISPATCH_KEY"    // streammgr's
	EnvDispatchPubKey = "CLOPEN_DISPATCH_PUBKEY" // artifacts' and the MCP bridge's
	EnvMCPKey         = "CLOPEN_MCP_KEY"         // the workers'
	EnvMCPPubKey      = "CLOPEN_MCP_PUBKEY"      // the MCP bridge's
)

// Keys are the key pairs of every kind; a service holds only the parts it
// needs (Only). A nil field is a key this holder does not have.
type Keys struct {
	CallerKey      ed25519.PrivateKey
	CallerPubKey   ed25519.PublicKey
	DispatchKey    ed25519.PrivateKey
	DispatchPubKey ed25519.PublicKey
	MCPKey         ed25519.PrivateKey
	MCPPubKey      ed25519.PublicKey
}

// Generate makes fresh key pairs of every kind: what `clopen dev` and
// `clopen admin bus-keys` start from.
func Generate() Keys {
	cpub, cpriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	dpub, dpriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	mpub, mpriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return Keys{CallerKey: cpriv, CallerPubKey: cpub, DispatchKey: dpriv, DispatchPubKey: dpub, MCPKey: mpriv, MCPPubKey: mpub}
}

// Need says which keys a service needs.
type Need struct {
	CallerKey, CallerPubKey, DispatchKey, DispatchPubKey, MCPKey, MCPPubKey bool
}

// Vars are the environment variables of the keys n names, in the order
// of the Env constants.
func (n Need) Vars() []string {
	var out []string
	for _, v := range []struct {
		need bool
		env  string
	}{{n.CallerKey, EnvCallerKey}, {n.CallerPubKey, EnvCallerPubKey}, {n.DispatchKey, EnvDispatchKey}, {n.DispatchPubKey, EnvDispatchPubKey},
		{n.MCPKey, EnvMCPKey}, {n.MCPPubKey, EnvMCPPubKey}} {
		if v.need {
			out = append(out, v.env)
		}
	}
	return out
}

// Only is k with only the keys n names: what one service is given.
func (k Keys) Only(n Need) Keys {
	var out Keys
	if n.CallerKey {
		out.CallerKey = k.CallerKey
	}
	if n.CallerPubKey {
		out.CallerPubKey = k.CallerPubKey
	}
	if n.DispatchKey {
		out.DispatchKey = k.DispatchKey
	}
	if n.DispatchPubKey {
		out.DispatchPubKey = k.DispatchPubKey
	}
	if n.MCPKey {
		out.MCPKey = k.MCPKey
	}
	if n.MCPPubKey {
		out.MCPPubKey = k.MCPPubKey
	}
	return out
}

// Check returns an error naming every key n needs that k lacks, and the
// variable and command that provide it.
func (k Keys) Check(n Need) error {
	var missing []string
	for _, m := range []struct {
		need, have bool
		env        string
	}{
		{n.CallerKey, k.CallerKey != nil, EnvCallerKey},
		{n.CallerPubKey, k.CallerPubKey != nil, EnvCallerPubKey},
		{n.DispatchKey, k.DispatchKey != nil, EnvDispatchKey},
		{n.DispatchPubKey, k.DispatchPubKey != nil, EnvDispatchPubKey},
		{n.MCPKey, k.MCPKey != nil, EnvMCPKey},
		{n.MCPPubKey, k.MCPPubKey != nil, EnvMCPPubKey},
	} {
		if m.need && !m.have {
			missing = append(missing, m.env)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("bus token keys: %s not set (`clopen admin bus-keys` makes them; the service trusts no tenant without them)",
			strings.Join(missing, ", "))
	}
	return nil
}

// FromEnv reads the keys set in the environment; an unset variable leaves
// its key nil, a malformed one is an error naming it.
func FromEnv(getenv func(string) string) (Keys, error) {
	var k Keys
	var err error
	if k.CallerKey, err = privateFromEnv(getenv, EnvCallerKey); err != nil {
		return Keys{}, err
	}
	if k.CallerPubKey, err = publicFromEnv(getenv, EnvCallerPubKey); err != nil {
		return Keys{}, err
	}
	if k.DispatchKey, err = privateFromEnv(getenv, EnvDispatchKey); err != nil {
		return Keys{}, err
	}
	if k.DispatchPubKey, err = publicFromEnv(getenv, EnvDispatchPubKey); err != nil {
		return Keys{}, err
	}
	if k.MCPKey, err = privateFromEnv(getenv, EnvMCPKey); err != nil {
		return Keys{}, err
	}
	if k.MCPPubKey, err = publicFromEnv(getenv, EnvMCPPubKey); err != nil {
		return Keys{}, err
	}
	return k, nil
}

func privateFromEnv(getenv func(string) string, name string) (ed25519.PrivateKey, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return nil, nil
	}
	seed, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s: want the standard base64 of a %d-byte ed25519 seed", name, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

func publicFromEnv(getenv func(string) string, name string) (ed25519.PublicKey, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return nil, nil
	}
	pub, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%s: want the standard base64 of a %d-byte ed25519 public key", name, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(pub), nil
}

// Env is k as NAME=value lines, in the encoding FromEnv reads: an env file
// for docker compose or `kubectl create secret generic --from-env-file`.
func (k Keys) Env() string {
	var b strings.Builder
	for _, kv := range []struct {
		name string
		raw  []byte
	}{
		{EnvCallerKey, seedOf(k.CallerKey)}, {EnvCallerPubKey, k.CallerPubKey},
		{EnvDispatchKey, seedOf(k.DispatchKey)}, {EnvDispatchPubKey, k.DispatchPubKey},
		{EnvMCPKey, seedOf(k.MCPKey)}, {EnvMCPPubKey, k.MCPPubKey},
	} {
		if kv.raw != nil {
			fmt.Fprintf(&b, "%s=%s\n", kv.name, base64.StdEncoding.EncodeToString(kv.raw))
		}
	}
	return b.String()
}

func seedOf(k ed25519.PrivateKey) []byte {
	if k == nil {
		return nil
	}
	return k.Seed()
}

// Verifier verifies the kinds whose public keys k holds (keys of the
// wrong length, which FromEnv and Generate never make, are left out).
func (k Keys) Verifier() *Verifier {
	v, _ := NewVerifier(map[Kind]ed25519.PublicKey{Caller: k.CallerPubKey, Dispatch: k.DispatchPubKey, MCP: k.MCPPubKey})
	return v
}

// CallerSigner signs caller tokens with k.CallerKey, living CallerTTL.
func (k Keys) CallerSigner() (*Signer, error) { return NewSigner(Caller, k.CallerKey, CallerTTL) }

// DispatchSigner signs dispatch tokens with k.DispatchKey, living
// DispatchTTL.
func (k Keys) DispatchSigner() (*Signer, error) {
	return NewSigner(Dispatch, k.DispatchKey, DispatchTTL)
}

// MCPSigner signs mcp tokens with k.MCPKey, living MCPTTL.
func (k Keys) MCPSigner() (*Signer, error) { return NewSigner(MCP, k.MCPKey, MCPTTL) }
