package svc

import (
	"context"
	"net/http"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
)

// TokenHeader carries the bustoken saying whom a request acts for. A
// Server verifies it before the endpoint runs; the request body's Caller is
// never trusted.
const TokenHeader = "Clopen-Caller"

type tokenKey struct{}
type claimsKey struct{}

// WithToken returns ctx whose calls (Call) carry tok in TokenHeader. A
// request a Server serves already has its caller's token in its context,
// so the calls its handler makes act for the same caller unless the
// handler sets another.
func WithToken(ctx context.Context, tok string) context.Context {
	return context.WithValue(ctx, tokenKey{}, tok)
}

// TokenFrom is the token ctx's calls carry, or "".
func TokenFrom(ctx context.Context) string {
	tok, _ := ctx.Value(tokenKey{}).(string)
	return tok
}

// ClaimsFrom returns the verified claims of the request ctx serves: false
// outside a Server's request.
func ClaimsFrom(ctx context.Context) (bustoken.Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(bustoken.Claims)
	return c, ok
}

// Unauthorized reports a request without a valid token for its endpoint.
func Unauthorized(format string, args ...any) *events.APIError {
	return Errorf(http.StatusUnauthorized, "unauthorized", format, args...)
}

// authenticate verifies the request's token as one of the kinds accept and
// returns ctx with the token and its claims.
func authenticate(ctx context.Context, v *bustoken.Verifier, tok string, accept []bustoken.Kind) (context.Context, *events.APIError) {
	c, err := v.Verify(tok, accept...)
	if err != nil {
		return ctx, Unauthorized("%v", err)
	}
	return context.WithValue(WithToken(ctx, tok), claimsKey{}, c), nil
}

// caller is a request that embeds events.Caller: *Req has SetWho through
// the embedded field.
type caller interface {
	Who() events.Caller
	SetWho(events.Caller)
}

// asCaller replaces the Caller req embeds with the one the verified claims
// of ctx name. A body naming another tenant is refused: it is a forgery or
// a bug, and either way must not be served as someone else.
func asCaller(ctx context.Context, req any) *events.APIError {
	c, ok := ClaimsFrom(ctx)
	if !ok {
		return Unauthorized("no verified token for this request")
	}
	r, ok := req.(caller)
	if !ok {
		return nil
	}
	if t := r.Who().TenantID; t != "" && t != c.TenantID {
		return Unauthorized("the request's tenantId %q is not the token's", t)
	}
	r.SetWho(events.Caller{TenantID: c.TenantID, UserID: c.UserID, UserName: c.UserName, Role: c.Role})
	return nil
}
