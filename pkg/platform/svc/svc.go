// Package svc is how Clopen services call each other: JSON request/reply over
// NATS `micro` endpoints. Errors cross the bus as *events.APIError in the
// micro error headers plus the JSON body, so every caller maps them once.
package svc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/jsonnul"
	"clopen.dev/pkg/platform/natstrace"
)

// DefaultTimeout bounds a call whose context has no deadline.
const DefaultTimeout = 10 * time.Second

// Errorf returns an *events.APIError with an HTTP status and a code.
func Errorf(status int, code, format string, args ...any) *events.APIError {
	return &events.APIError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Convenience constructors for the common classes.
func Invalid(format string, args ...any) *events.APIError {
	return Errorf(http.StatusBadRequest, "invalid_request", format, args...)
}

// NotFound reports a resource that does not exist for the caller's tenant.
func NotFound(format string, args ...any) *events.APIError {
	return Errorf(http.StatusNotFound, "not_found", format, args...)
}

// Conflict reports a request that clashes with the resource's state.
func Conflict(format string, args ...any) *events.APIError {
	return Errorf(http.StatusConflict, "conflict", format, args...)
}

// Unavailable reports a dependency that cannot answer now.
func Unavailable(format string, args ...any) *events.APIError {
	return Errorf(http.StatusServiceUnavailable, "unavailable", format, args...)
}

// NoResponders is the error of a call nobody was there to answer: an
// unavailable *events.APIError naming the subject (errors.As finds it) that
// also matches nats.ErrNoResponders, so a caller can tell "no service at
// all" from a service's own 503.
type NoResponders struct{ *events.APIError }

// Unwrap returns the APIError and nats.ErrNoResponders.
func (e *NoResponders) Unwrap() []error { return []error{e.APIError, nats.ErrNoResponders} }

// Call sends req to subject and decodes the reply into resp (nil to ignore
// it). A service error comes back as *events.APIError; no responders as a
// *NoResponders.
func Call(ctx context.Context, nc *nats.Conn, subject string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", subject, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	msg := nats.NewMsg(subject)
	msg.Data = body
	natstrace.Inject(ctx, msg.Header)
	reply, err := nc.RequestMsgWithContext(ctx, msg)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return &NoResponders{Unavailable("no %s service is running", subject)}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return Errorf(http.StatusGatewayTimeout, "timeout", "%s did not answer in time", subject)
	case err != nil:
		return fmt.Errorf("call %s: %w", subject, err)
	}
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != "" {
		var apiErr events.APIError
		if json.Unmarshal(reply.Data, &apiErr) != nil || apiErr.Status == 0 {
			status, _ := strconv.Atoi(code)
			apiErr = events.APIError{Status: status, Code: "internal", Message: reply.Header.Get(micro.ErrorHeader)}
		}
		return &apiErr
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(reply.Data, resp); err != nil {
		return fmt.Errorf("decode %s reply: %w", subject, err)
	}
	return nil
}

// MaxConcurrent is how many requests one endpoint serves at once. A micro
// endpoint is a subscription whose messages arrive one after another; each
// request runs in its own goroutine so a slow one (a database transaction)
// does not hold up the rest, and past this many the subscription waits.
const MaxConcurrent = 64

// Handler adapts a typed function to a micro endpoint: the request body is
// decoded strictly into Req (an error names the problem; a string holding
// NUL, which Postgres cannot store, is refused naming its field), the function's
// error is sent as an APIError (anything not already one becomes a 500 whose
// detail is logged, not sent), and its result as JSON. Requests are served
// concurrently, up to MaxConcurrent at a time.
func Handler[Req, Resp any](onInternal func(error), f func(ctx context.Context, req Req) (Resp, error)) micro.Handler {
	sem := make(chan struct{}, MaxConcurrent)
	serve := serveFunc(onInternal, f)
	return micro.HandlerFunc(func(r micro.Request) {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			serve(r)
		}()
	})
}

func serveFunc[Req, Resp any](onInternal func(error), f func(ctx context.Context, req Req) (Resp, error)) func(micro.Request) {
	return func(r micro.Request) {
		ctx := natstrace.Extract(context.Background(), nats.Header(r.Headers()))
		var req Req
		dec := json.NewDecoder(bytesReader(r.Data()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			respondErr(r, Invalid("decode request: %v", err))
			return
		}
		if err := jsonnul.Check(r.Data()); err != nil {
			respondErr(r, Invalid("decode request: %v", err))
			return
		}
		resp, err := f(ctx, req)
		if err != nil {
			var apiErr *events.APIError
			if !errors.As(err, &apiErr) {
				if onInternal != nil {
					onInternal(err)
				}
				apiErr = Errorf(http.StatusInternalServerError, "internal", "internal error")
			}
			respondErr(r, apiErr)
			return
		}
		_ = r.RespondJSON(resp)
	}
}

// respondErr sends e with the micro error headers. It goes through Respond,
// not micro's Error: Error records the error on the request, which micro
// reads for its stats as soon as the handler returns, and Handler answers
// from another goroutine (a data race). The wire is the same; the
// endpoint's error count in micro's stats stays 0.
func respondErr(r micro.Request, e *events.APIError) {
	body, _ := json.Marshal(e)
	_ = r.Respond(body, micro.WithHeaders(micro.Headers{micro.ErrorHeader: {e.Message}, micro.ErrorCodeHeader: {strconv.Itoa(e.Status)}}))
}
