package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"reflect"
	"strconv"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/jsonnul"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/auth"
	"clopen.dev/services/gateway/internal/identity"
)

// none is the body of a route that takes or returns nothing.
type none struct{}

var noneType = reflect.TypeFor[none]()

// endpoint is how a route is served and what it exchanges.
type endpoint struct {
	in, out reflect.Type // noneType when there is no body
	status  int          // success status
	// binary lists the media types of a body that is not JSON (in is then
	// noneType): the handler reads it itself.
	binary []string
	media  string // the media type of a body the handler writes itself ("": JSON of out)
	serve  func(w http.ResponseWriter, r *http.Request, p identity.Principal)
}

// handle adapts a typed handler: the body is decoded strictly into In, the
// result encoded as JSON with status (no body for none), errors written
// through StatusFor. The types are what the OpenAPI document describes.
func handle[In, Out any](s *Server, status int, f func(ctx context.Context, r *http.Request, p identity.Principal, in In) (Out, error)) endpoint {
	return handleW(s, status, func(_ http.ResponseWriter, r *http.Request, p identity.Principal, in In) (Out, error) {
		return f(r.Context(), r, p, in)
	})
}

// handleW is handle for a handler that also sets response headers (a
// cookie) before its result is written.
func handleW[In, Out any](s *Server, status int, f func(w http.ResponseWriter, r *http.Request, p identity.Principal, in In) (Out, error)) endpoint {
	ep := endpoint{in: reflect.TypeFor[In](), out: reflect.TypeFor[Out](), status: status}
	ep.serve = func(w http.ResponseWriter, r *http.Request, p identity.Principal) {
		var in In
		if ep.in != noneType {
			if err := s.decode(w, r, &in); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		out, err := f(w, r, p, in)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if ep.out == noneType {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, out)
	}
	return ep
}

// raw wraps a handler that writes its own response.
func raw(h http.Handler, out reflect.Type) endpoint {
	return endpoint{in: noneType, out: out, status: http.StatusOK,
		serve: func(w http.ResponseWriter, r *http.Request, _ identity.Principal) { h.ServeHTTP(w, r) }}
}

// decode reads the body strictly: at most MaxBodyBytes, one JSON value, no
// field the type does not have, no string holding NUL (which Postgres
// cannot store).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return err
	case errors.Is(err, os.ErrDeadlineExceeded): // the server's read timeout
		return &events.APIError{Status: http.StatusRequestTimeout, Code: "timeout", Message: "request body: not received in time"}
	case err != nil:
		return apierr.New(apierr.ErrInvalid, "request body: could not be read: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return apierr.New(apierr.ErrInvalid, "request body: empty, want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return apierr.New(apierr.ErrInvalid, "request body: %s", describeJSONError(err))
	}
	if dec.More() {
		return apierr.New(apierr.ErrInvalid, "request body: more than one JSON value")
	}
	if err := jsonnul.Check(body); err != nil {
		return apierr.New(apierr.ErrInvalid, "request body: %v", err)
	}
	return nil
}

// describeJSONError names the field a decoding error is about.
func describeJSONError(err error) string {
	var typ *json.UnmarshalTypeError
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q: want %s, got JSON %s", typ.Field, typ.Type, typ.Value)
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at byte %d: %v", syn.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: it ends too soon"
	}
	// encoding/json reports an unknown field as `json: unknown field "x"`.
	return err.Error()
}

// writeError sends err as {"error":{"code","message"}} with its status.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := apierr.StatusFor(err)
	if !ok {
		s.logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	switch {
	case e.Status == http.StatusUnauthorized:
		v := `Bearer realm="clopen"`
		if auth.BearerToken(r, true) != "" {
			v += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", v)
	case e.Status == http.StatusTooManyRequests:
		var rl *apierr.RateLimitedError
		switch {
		case errors.As(err, &rl):
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(rl.RetryAfter.Seconds()))))
		case e.RetryAfter > 0: // a service's refusal for load (tenant_queue_full)
			w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
		}
	case e.Status == http.StatusPaymentRequired && e.RetryAfter > 0: // budget_exhausted: when the period resets
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status, api.Error{Error: api.ErrorDetail{Code: e.Code, Message: e.Message, ClientRequestID: e.ClientRequestID,
		Budget: e.Budget}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func errNoRoute(r *http.Request) error {
	return apierr.New(apierr.ErrNotFound, "no route %s %s", r.Method, r.URL.Path)
}
