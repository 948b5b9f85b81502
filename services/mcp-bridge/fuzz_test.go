package bridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/platform/bustoken"
)

func base64Decode(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
func base64Encode(b []byte) string          { return base64.RawURLEncoding.EncodeToString(b) }

// noRuns is a run_owner bucket that holds no run; the fuzz target never
// gets past a token anyway.
type noRuns struct{}

func (noRuns) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	return nil, jetstream.ErrKeyNotFound
}

// FuzzRefusal: whatever Authorization header and body a request carries
// without a valid token, it is refused 401 with a well-formed JSON-RPC
// error whose id is the request's own when that is a string or number,
// and null otherwise; it never reaches the tools.
func FuzzRefusal(f *testing.F) {
	keys := bustoken.Generate()
	signer, _ := keys.MCPSigner()
	other, _ := bustoken.Generate().MCPSigner()
	forged, _ := other.Sign(bustoken.Claims{TenantID: "t", RunID: "r", SessionID: "s", ProjectID: "p"})
	valid, _ := signer.Sign(bustoken.Claims{TenantID: "t", RunID: "r", SessionID: "s", ProjectID: "p"})
	for _, seed := range []struct{ auth, body string }{
		{"", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"Bearer " + forged, `{"jsonrpc":"2.0","id":"a\u0000b","method":"tools/call"}`},
		{"Bearer " + valid, `{"jsonrpc":"2.0","id":1e400,"method":"initialize"}`},
		{"bearer  x.y", `[{"jsonrpc":"2.0","id":1}]`},
		{"Bearer", `{"id":{"x":1}}`},
		{"Bearer a.b.c", `{"id":null}`},
		{"Basic dXNlcjpwYXNz", "\xff\xfe"},
	} {
		f.Add(seed.auth, []byte(seed.body))
	}
	reached := false
	h := authenticate(keys.Verifier(), noRuns{}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	f.Fuzz(func(t *testing.T, auth string, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		req.Header["Authorization"] = []string{auth}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if reached {
			t.Fatal("a request reached the tools")
		}
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", rec.Code)
		}
		var e rpcError
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.JSONRPC != "2.0" || e.Error.Code != codeUnauthorized || e.Error.Message == "" {
			t.Fatalf("body %q: not a JSON-RPC error (%v)", rec.Body.String(), err)
		}
		if string(e.ID) == "null" {
			return
		}
		// A non-null id is the request's own, a string or a number.
		var sent struct{ ID json.RawMessage }
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatalf("id %s echoed from a body that is not a JSON object", e.ID)
		}
		got, want := decodeID(t, e.ID), decodeID(t, sent.ID)
		if got != want {
			t.Fatalf("id %v, the request's is %v", got, want)
		}
		switch got.(type) {
		case string, json.Number:
		default:
			t.Fatalf("id %s is neither string nor number", e.ID)
		}
	})
}

func decodeID(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("id %s: %v", raw, err)
	}
	return v
}
