package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/services/mcp-bridge/internal/binding"
)

// codeUnauthorized is the JSON-RPC error code of a refused request (in
// the range JSON-RPC leaves to servers).
const codeUnauthorized = -32001

// maxPeek bounds how much of a refused request's body is read to find its
// JSON-RPC id.
const maxPeek = 64 << 10

// runs tells whether a run is live: held by a worker, for its tenant.
type runs interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
}

// errRunEnded is a token whose run is over: no worker holds it now.
var errRunEnded = errors.New("the run this token was signed for has ended")

// authenticate admits a request carrying a valid mcp token of a live run,
// and hands next a context carrying that run (binding.With). Anything else
// is answered 401 with a JSON-RPC error: there is no other way in.
func authenticate(verifier *bustoken.Verifier, owners runs, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run, err := verify(r.Context(), verifier, owners, r.Header.Get("Authorization"))
		if err != nil {
			status := http.StatusUnauthorized
			if errors.Is(err, errUnavailable) {
				status = http.StatusServiceUnavailable
			}
			refuse(w, r, status, err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(binding.With(r.Context(), run)))
	})
}

// errUnavailable is a run whose state could not be read.
var errUnavailable = errors.New("the run's state cannot be read now")

// verify returns the run an Authorization header's token binds to, when
// the token is an mcp token the verifier accepts and its run is still
// held by a worker for the token's tenant.
func verify(ctx context.Context, verifier *bustoken.Verifier, owners runs, header string) (binding.Run, error) {
	tok, err := bearer(header)
	if err != nil {
		return binding.Run{}, err
	}
	c, err := verifier.Verify(tok, bustoken.MCP)
	if err != nil {
		return binding.Run{}, err
	}
	if c.RunID == "" || c.SessionID == "" || c.ProjectID == "" {
		return binding.Run{}, fmt.Errorf("%w: the token names no run", bustoken.ErrInvalid)
	}
	e, err := owners.Get(ctx, c.RunID)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		return binding.Run{}, errRunEnded
	case errors.Is(err, jetstream.ErrInvalidKey):
		return binding.Run{}, fmt.Errorf("%w: the token's run id is not one", bustoken.ErrInvalid)
	case err != nil:
		return binding.Run{}, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	var owner events.RunOwner
	if json.Unmarshal(e.Value(), &owner) != nil || owner.Tenant != c.TenantID {
		// Another tenant's run is reported like a run that is over.
		return binding.Run{}, errRunEnded
	}
	return binding.Run{TenantID: c.TenantID, ProjectID: c.ProjectID, SessionID: c.SessionID, RunID: c.RunID,
		Engine: c.Engine, Servers: c.Servers}, nil
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(header string) (string, error) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", fmt.Errorf("%w: want an Authorization: Bearer header", bustoken.ErrInvalid)
	}
	return strings.TrimSpace(tok), nil
}

// rpcError is a JSON-RPC 2.0 error response.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// refuse answers r with status and a JSON-RPC error saying why, echoing
// the request's id when its body is a JSON-RPC request that has one.
func refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(r.Body, maxPeek))
	}
	writeRPCError(w, status, requestID(body), why)
}

func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, why string) {
	e := rpcError{JSONRPC: "2.0", ID: id}
	e.Error.Code, e.Error.Message = codeUnauthorized, why
	if status != http.StatusUnauthorized {
		e.Error.Code = -32603 // internal error: the state could not be read
	}
	if status == http.StatusNotFound {
		e.Error.Code = -32601
	}
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="clopen-mcp"`)
	}
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
}

// requestID is the id of a JSON-RPC request body: a string or a number,
// copied compact; null when the body is none, a batch, a notification or
// its id is of another type.
func requestID(body []byte) json.RawMessage {
	null := json.RawMessage("null")
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
		return null
	}
	var id any
	dec := json.NewDecoder(bytes.NewReader(req.ID))
	dec.UseNumber()
	if dec.Decode(&id) != nil {
		return null
	}
	switch id.(type) {
	case string, json.Number:
		var b bytes.Buffer
		if json.Compact(&b, req.ID) != nil {
			return null
		}
		return b.Bytes()
	}
	return null
}
