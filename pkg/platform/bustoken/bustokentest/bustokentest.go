// Package bustokentest signs bus tokens in tests, as the gateway and
// streammgr sign them.
package bustokentest

import (
	"context"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/svc"
)

// Sign returns a token of kind with claims c, signed with that kind's
// signing key of keys and living a minute; it fails the test on error.
func Sign(t testing.TB, keys bustoken.Keys, kind bustoken.Kind, c bustoken.Claims) string {
	t.Helper()
	key := keys.CallerKey
	switch kind {
	case bustoken.Dispatch:
		key = keys.DispatchKey
	case bustoken.MCP:
		key = keys.MCPKey
	}
	s, err := bustoken.NewSigner(kind, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// AsCaller returns ctx whose calls carry the caller token the gateway
// signs for the events.Caller req embeds; a request naming no tenant goes
// without a token (and is refused).
func AsCaller(t testing.TB, ctx context.Context, keys bustoken.Keys, req any) context.Context {
	t.Helper()
	c := req.(interface{ Who() events.Caller }).Who()
	if c.TenantID == "" {
		return ctx
	}
	return svc.WithToken(ctx, Sign(t, keys, bustoken.Caller,
		bustoken.Claims{TenantID: c.TenantID, UserID: c.UserID, UserName: c.UserName, Role: c.Role}))
}
