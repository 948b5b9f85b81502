package mcpoauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// stateClaims is what a signed state carries. The PKCE verifier itself
// stays in the pending store; the state names its record (Nonce).
type stateClaims struct {
	Tenant  string `json:"t"`
	Slug    string `json:"s"`
	Nonce   string `json:"n"`
	Expires int64  `json:"e"`
}

// stateDomain separates these signatures from any other use of the key.
const stateDomain = "clopen mcp oauth state v1\n"

const stateAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."

// signState encodes c and appends an HMAC-SHA256 of it under key.
func signState(key []byte, c stateClaims) string {
	payload, _ := json.Marshal(c) // a struct of strings and an int always marshals
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(stateMAC(key, p))
}

func stateMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(stateDomain))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// verifyState checks state's signature, expiry and tenant. A state issued
// to another tenant is refused even when its signature holds: the callback
// is served to a signed-in user, and a code obtained by one tenant's user
// must never land in another tenant's server row.
func verifyState(key []byte, state, tenant string, now time.Time) (stateClaims, error) {
	// Only the base64url alphabet: the decoder would skip line breaks, and a
	// state is exactly the string that was signed.
	if strings.Trim(state, stateAlphabet) != "" {
		return stateClaims{}, fmt.Errorf("%w: malformed", ErrState)
	}
	p, sig, ok := strings.Cut(state, ".")
	if !ok {
		return stateClaims{}, fmt.Errorf("%w: malformed", ErrState)
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, stateMAC(key, p)) {
		return stateClaims{}, fmt.Errorf("%w: bad signature", ErrState)
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return stateClaims{}, fmt.Errorf("%w: malformed payload", ErrState)
	}
	var c stateClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return stateClaims{}, fmt.Errorf("%w: malformed payload", ErrState)
	}
	if now.Unix() >= c.Expires {
		return stateClaims{}, fmt.Errorf("%w: expired at %s", ErrState, time.Unix(c.Expires, 0).UTC().Format(time.RFC3339))
	}
	if c.Tenant != tenant {
		return stateClaims{}, fmt.Errorf("%w: issued to another tenant", ErrState)
	}
	return c, nil
}

// StateTenant is the tenant a callback's state names, read without checking
// its signature or expiry: for routing the callback to the tenant's
// service, which then verifies the state in Complete. It errs on a state
// that is not one this package signs.
func StateTenant(state string) (string, error) {
	p, _, ok := strings.Cut(state, ".")
	if !ok || strings.Trim(state, stateAlphabet) != "" {
		return "", fmt.Errorf("%w: malformed", ErrState)
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	var c stateClaims
	if err != nil || json.Unmarshal(payload, &c) != nil || c.Tenant == "" {
		return "", fmt.Errorf("%w: malformed payload", ErrState)
	}
	return c.Tenant, nil
}
