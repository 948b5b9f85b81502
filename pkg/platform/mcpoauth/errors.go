package mcpoauth

import "errors"

// Errors callers match on with errors.Is. Every error this package returns
// wraps at most one of them and says what went wrong in its text.
var (
	// ErrNeedsAuth means a person must authorize again: there is no token,
	// the refresh token was refused (invalid_grant) or the client is no
	// longer known to the authorization server. It maps to the needs_auth
	// status of a server.
	ErrNeedsAuth = errors.New("needs_auth")
	// ErrUnreachable means a server could not be reached or failed (network
	// error, 5xx). It maps to the unreachable status; a later try may work.
	ErrUnreachable = errors.New("unreachable")
	// ErrMetadata means discovery found no usable or trustworthy metadata:
	// a mismatched issuer or resource, an endpoint over plain http to a host
	// not allowed, no PKCE S256, a malformed document.
	ErrMetadata = errors.New("unusable oauth metadata")
	// ErrNoRegistration means the authorization server offers no dynamic
	// client registration; the caller supplies a configured client instead.
	ErrNoRegistration = errors.New("no dynamic client registration")
	// ErrState means a callback's state is forged, expired, already used or
	// bound to another tenant.
	ErrState = errors.New("invalid oauth state")
	// ErrDenied means the authorization server returned an error to the
	// callback instead of a code (the user refused consent, for example).
	ErrDenied = errors.New("authorization denied")
)
