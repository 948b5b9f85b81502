// Package apierr is the gateway's error vocabulary and its one mapping to
// the wire: every package classifies a failure with one of the sentinels
// below (or passes on the *events.APIError a service returned), and
// StatusFor turns it into the status, code and message that REST and the
// WebSocket both send.
package apierr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"clopen.dev/pkg/events"
)

// The classes of failure callers match on.
var (
	ErrInvalid         = errors.New("invalid request")
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("forbidden")
	// ErrNotFound is also what a resource of another tenant, or a project the
	// caller is not a member of, looks like: its existence never leaks.
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrTooLarge = errors.New("too large")
)

// Error is a classified failure with a message fit for the client.
type Error struct {
	Kind error // one of the sentinels
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the class, so errors.Is(err, ErrNotFound) works.
func (e *Error) Unwrap() error { return e.Kind }

// New returns an error of class kind with a formatted client-facing message.
func New(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// RateLimitedError says the key spent its request budget; retry after
// RetryAfter.
type RateLimitedError struct {
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("rate limit exceeded: retry in %s", e.RetryAfter.Round(time.Millisecond))
}

// StatusFor maps any error to the APIError the client sees. It is the only
// place the gateway decides statuses. ok is false for an unclassified error:
// the client gets a bare 500 and the caller should log err.
func StatusFor(err error) (e *events.APIError, ok bool) {
	var (
		apiErr   *events.APIError
		cls      *Error
		rate     *RateLimitedError
		tooLarge *http.MaxBytesError
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr, true
	case errors.As(err, &rate):
		return &events.APIError{Status: http.StatusTooManyRequests, Code: "rate_limited", Message: rate.Error()}, true
	case errors.As(err, &tooLarge):
		return &events.APIError{Status: http.StatusRequestEntityTooLarge, Code: "too_large",
			Message: fmt.Sprintf("request body larger than %d bytes", tooLarge.Limit)}, true
	case errors.Is(err, context.DeadlineExceeded):
		return &events.APIError{Status: http.StatusGatewayTimeout, Code: "timeout", Message: "the request took too long"}, true
	case errors.Is(err, context.Canceled):
		// The client went away or the gateway is stopping: nobody to blame.
		return &events.APIError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: "the request was cancelled"}, true
	}
	msg := err.Error()
	if errors.As(err, &cls) {
		msg = cls.Msg
	}
	for _, c := range classes {
		if errors.Is(err, c.kind) {
			return &events.APIError{Status: c.status, Code: c.code, Message: msg}, true
		}
	}
	return &events.APIError{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"}, false
}

var classes = []struct {
	kind   error
	status int
	code   string
}{
	{ErrInvalid, http.StatusBadRequest, "invalid_request"},
	{ErrUnauthenticated, http.StatusUnauthorized, "unauthorized"},
	{ErrForbidden, http.StatusForbidden, "forbidden"},
	{ErrNotFound, http.StatusNotFound, "not_found"},
	{ErrConflict, http.StatusConflict, "conflict"},
	{ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
}
