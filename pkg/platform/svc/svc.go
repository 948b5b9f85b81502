// Package svc is how Clopen services call each other: JSON request/reply over
// NATS `micro` endpoints. Errors cross the bus as *events.APIError in the
// micro error headers plus the JSON body, so every caller maps them once.
// The caller's deadline travels in TimeoutHeader and whom it acts for in
// TokenHeader; a service serves its endpoints through a Server, which
// verifies that token, and whose handlers run under the service's lifetime
// and that deadline.
package svc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/jsonnul"
	"clopen.dev/pkg/platform/natstrace"
)

// DefaultTimeout bounds a call whose context has no deadline.
const DefaultTimeout = 10 * time.Second

// TimeoutHeader carries the caller's deadline to the handler, as the
// milliseconds left when the request was sent: a duration rather than a
// clock reading, so that the two hosts' clocks need not agree.
const TimeoutHeader = "Clopen-Timeout-Ms"

// maxTimeout bounds what TimeoutHeader may say (a day).
const maxTimeout = 24 * time.Hour

// Errorf returns an *events.APIError with an HTTP status and a code.
func Errorf(status int, code, format string, args ...any) *events.APIError {
	return &events.APIError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid reports a request that is malformed or breaks a rule; the message
// names the field.
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

// Call sends req to subject, with ctx's token (WithToken), and decodes the
// reply into resp (nil to ignore it). A service error comes back as *events.APIError; no responders as a
// *NoResponders.
func Call(ctx context.Context, nc *nats.Conn, subject string, req, resp any) error {
	ctx, span := tracer.Start(ctx, subject, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("rpc.system", "nats"), attribute.String("messaging.destination.name", subject)))
	defer span.End()
	err := call(ctx, nc, subject, req, resp)
	failed(span, err)
	return err
}

var tracer = otel.Tracer("clopen.dev/pkg/platform/svc")

// failed marks span an error when err is one: a server error or a failure
// to get an answer, not a refusal of the request (a 4xx), which is the
// caller's and is kept as an attribute only.
func failed(span trace.Span, err error) {
	if err == nil {
		return
	}
	var apiErr *events.APIError
	if errors.As(err, &apiErr) {
		span.SetAttributes(attribute.Int("clopen.error.status", apiErr.Status), attribute.String("clopen.error.code", apiErr.Code))
		if apiErr.Status < 500 {
			return
		}
	}
	span.SetStatus(codes.Error, err.Error())
}

func call(ctx context.Context, nc *nats.Conn, subject string, req, resp any) error {
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
	if tok := TokenFrom(ctx); tok != "" {
		msg.Header.Set(TokenHeader, tok)
	}
	deadline, _ := ctx.Deadline()
	// Rounded up, so the handler never gives up before the caller does.
	left := (time.Until(deadline) + time.Millisecond - 1).Milliseconds()
	msg.Header.Set(TimeoutHeader, strconv.FormatInt(max(left, 0), 10))
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

// Endpoint serves one request under ctx. Server.Bind makes it a micro
// handler.
type Endpoint func(ctx context.Context, r micro.Request)

// Handler adapts a typed function to an Endpoint: the request body is
// decoded strictly into Req (an error names the problem; a string holding
// NUL, which Postgres cannot store, is refused naming its field), the
// events.Caller it embeds is replaced by the request's verified token's (a
// body naming another tenant is refused 401; outside a Server, with no
// verified token, every request is refused 401), the function's
// error is sent as an APIError (anything not already one becomes a 504 when
// the caller's deadline has passed, a 503 when the service stopped it, else
// a 500 whose detail is logged, not sent), and its result as JSON.
func Handler[Req, Resp any](onInternal func(error), f func(ctx context.Context, req Req) (Resp, error)) Endpoint {
	return func(ctx context.Context, r micro.Request) {
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
		if err := asCaller(ctx, &req); err != nil {
			respondErr(r, err)
			return
		}
		resp, err := f(ctx, req)
		if err != nil {
			var apiErr *events.APIError
			switch {
			case errors.As(err, &apiErr):
			case errors.Is(ctx.Err(), context.DeadlineExceeded):
				// It failed because the caller's deadline passed (a query
				// cancelled, say): the caller's timeout, not our fault.
				apiErr = Errorf(http.StatusGatewayTimeout, "timeout", "%s did not finish in time", r.Subject())
			case ctx.Err() != nil:
				apiErr = Unavailable("the service stopped before the request finished")
			default:
				if onInternal != nil {
					onInternal(err)
				}
				apiErr = Errorf(http.StatusInternalServerError, "internal", "internal error")
			}
			failed(trace.SpanFromContext(ctx), apiErr)
			respondErr(r, apiErr)
			return
		}
		_ = r.RespondJSON(resp)
	}
}

// Server owns the requests of one service. Each request's token
// (TokenHeader) is verified first: one of the kinds its endpoint accepts,
// or the request is refused 401 without reaching the endpoint. Each
// request runs in its own goroutine under a context that carries the
// service context's values, the token and its claims (ClaimsFrom), and
// the caller's deadline (TimeoutHeader). When the service's context ends
// (or Stop is called) the server shuts the service down gracefully: the
// micro service stops taking requests first, so the other replicas get the
// new ones; requests this process already received are still served; the
// running ones get StopGrace to finish before their contexts are cancelled.
type Server struct {
	nc      *nats.Conn
	service micro.Service
	tokens  *bustoken.Verifier
	reqs    context.Context // the parent of every request's context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	last    atomic.Int64 // when the latest request came in, in Unix nanoseconds

	once    sync.Once
	stopReq chan struct{}
	done    chan struct{} // closed when the shutdown has finished

	mu      sync.Mutex
	stopped bool
}

// StopGrace is how long a stopping server lets its running requests finish
// before it cancels them.
const StopGrace = 10 * time.Second

// drainQuiet is how long after its unsubscription a stopping server waits
// for requests that were already on their way to it. micro drains the
// subscriptions without saying when they are empty, so the server waits
// until none has come in for this long.
const drainQuiet = 100 * time.Millisecond

// NewServer returns the Server of service, which answers on nc and
// verifies tokens with tokens (nil verifies none: every request is
// refused). It shuts the service down when ctx ends.
func NewServer(ctx context.Context, nc *nats.Conn, service micro.Service, tokens *bustoken.Verifier) *Server {
	return newServer(ctx, nc, service, tokens, StopGrace)
}

func newServer(ctx context.Context, nc *nats.Conn, service micro.Service, tokens *bustoken.Verifier, grace time.Duration) *Server {
	reqs, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{nc: nc, service: service, tokens: tokens, reqs: reqs, cancel: cancel, stopReq: make(chan struct{}), done: make(chan struct{})}
	go func() {
		select {
		case <-ctx.Done():
		case <-s.stopReq:
		}
		s.shutdown(grace)
	}()
	return s
}

// Bind returns the micro handler of e, which serves requests whose token
// is of one of the kinds accept (none given: caller tokens, the gateway's).
// Up to MaxConcurrent of its requests run at once. A request arriving once
// the server has stopped is answered 503.
func (s *Server) Bind(e Endpoint, accept ...bustoken.Kind) micro.Handler {
	if len(accept) == 0 {
		accept = []bustoken.Kind{bustoken.Caller}
	}
	sem := make(chan struct{}, MaxConcurrent)
	return micro.HandlerFunc(func(r micro.Request) {
		sem <- struct{}{}
		if !s.enter() {
			<-sem
			respondErr(r, Unavailable("the service is stopping"))
			return
		}
		go func() {
			defer s.wg.Done()
			defer func() { <-sem }()
			s.serve(e, r, accept)
		}()
	})
}

// enter counts a request in, unless the server has stopped.
func (s *Server) enter() bool {
	s.last.Store(time.Now().UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.wg.Add(1)
	return true
}

// serve runs e under the caller's trace, token and deadline.
func (s *Server) serve(e Endpoint, r micro.Request, accept []bustoken.Kind) {
	ctx, apiErr := authenticate(s.reqs, s.tokens, r.Headers().Get(TokenHeader), accept)
	if apiErr != nil {
		respondErr(r, apiErr)
		return
	}
	ctx = natstrace.Extract(ctx, nats.Header(r.Headers()))
	ctx, span := tracer.Start(ctx, r.Subject(), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("rpc.system", "nats"), attribute.String("messaging.destination.name", r.Subject())))
	defer span.End()
	timeout, ok, err := callerTimeout(r.Headers().Get(TimeoutHeader))
	if err != nil {
		respondErr(r, Invalid("%v", err))
		return
	}
	if ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	e(ctx, r)
}

// Stop shuts the service down, unless its context's end already has, and
// returns once the last request has been answered.
func (s *Server) Stop() {
	s.once.Do(func() { close(s.stopReq) })
	<-s.done
}

// shutdown stops the micro service, serves what was already sent to it,
// and gives the running requests grace before cancelling them.
func (s *Server) shutdown(grace time.Duration) {
	defer close(s.done)
	defer s.cancel()
	deadline := time.Now().Add(grace)
	_ = s.service.Stop() // unsubscribes, draining what the client holds
	// Once the NATS server has the unsubscriptions nothing new is routed
	// here; what it routed before is in the client's buffers, delivered in
	// well under drainQuiet.
	_ = s.nc.FlushTimeout(time.Until(deadline))
	s.last.Store(time.Now().UnixNano())
	for time.Since(time.Unix(0, s.last.Load())) < drainQuiet && time.Now().Before(deadline) {
		time.Sleep(drainQuiet / 4)
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	finished := make(chan struct{})
	go func() { s.wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Until(deadline)):
		s.cancel()
		<-finished
	}
}

// callerTimeout reads TimeoutHeader: ok is false when the caller sent none.
func callerTimeout(v string) (time.Duration, bool, error) {
	if v == "" {
		return 0, false, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > maxTimeout.Milliseconds() {
		return 0, false, fmt.Errorf("header %s: want milliseconds from 0 to %d, got %q", TimeoutHeader, maxTimeout.Milliseconds(), v)
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}

// respondErr sends e with the micro error headers. It goes through Respond,
// not micro's Error: Error records the error on the request, which micro
// reads for its stats as soon as the handler returns, and a Server answers
// from another goroutine (a data race). The wire is the same; the
// endpoint's error count in micro's stats stays 0.
func respondErr(r micro.Request, e *events.APIError) {
	body, _ := json.Marshal(e)
	_ = r.Respond(body, micro.WithHeaders(micro.Headers{micro.ErrorHeader: {e.Message}, micro.ErrorCodeHeader: {strconv.Itoa(e.Status)}}))
}
