package svc_test

import (
	"context"
	"testing"

	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
	"clopen.dev/pkg/platform/svc"
)

// keys sign the tests' tokens; verifier is what their servers check them
// with.
var (
	keys     = bustoken.Generate()
	verifier = keys.Verifier()
)

// signed returns ctx whose calls act for tenant t1 with a caller token.
func signed(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	return svc.WithToken(ctx, callerToken(t, bustoken.Claims{TenantID: "t1", UserID: "u1"}))
}

func callerToken(t testing.TB, c bustoken.Claims) string {
	t.Helper()
	return bustokentest.Sign(t, keys, bustoken.Caller, c)
}
