package modelproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"clopen.dev/pkg/events"
)

var tracer = otel.Tracer("clopen.dev/services/engine-worker/modelproxy")

// maxModelPeek bounds how much of a request body the proxy reads to learn
// the model it asks for; a larger body is forwarded whole, unread.
const maxModelPeek = 8 << 20

// Traced gives every model call of the run a client span: the HTTP call
// as the provider saw it ("POST /v1/messages"), with the model asked for,
// the HTTP status, the usage the response reported and error.type when it
// failed. parent says, when a call arrives, which span it belongs under
// (the worker's chat span of the answer being awaited, else the run's).
// The agent's own account of its answers may leave calls out; the proxy
// sees each one.
func (sp *Span) Traced(parent func() context.Context, provider string) {
	sp.m.mu.Lock()
	sp.trace, sp.provider = parent, provider
	sp.m.mu.Unlock()
}

// callSpan starts the span of one proxied model call of the run rec belongs
// to; nil when that run is not traced. It may replace r.Body with one that
// reads the same bytes.
func (p *Proxy) callSpan(r *http.Request, rec *metered) trace.Span {
	sp := rec.span
	if sp == nil {
		return nil
	}
	sp.m.mu.Lock()
	parent, provider := sp.trace, sp.provider
	sp.m.mu.Unlock()
	if parent == nil {
		return nil
	}
	model := requestedModel(r)
	attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("server.address", p.base.Hostname()), attribute.String("http.request.method", r.Method),
		attribute.String("url.path", r.URL.Path)}
	if provider != "" {
		attrs = append(attrs, attribute.String("gen_ai.provider.name", provider))
	}
	if model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", model))
	}
	_, s := tracer.Start(parent(), r.Method+" "+r.URL.Path, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return s
}

// endCall ends a model call's span with its outcome.
func endCall(s trace.Span, status int, u events.TokenUsage, metered bool) {
	if s == nil {
		return
	}
	if status != 0 {
		s.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if metered {
		s.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens))
	}
	if status == 0 || status >= 400 {
		kind := strconv.Itoa(status)
		if status == 0 {
			kind = "no_response"
		}
		s.SetAttributes(attribute.String("error.type", kind))
		s.SetStatus(codes.Error, "the model call failed")
	}
	s.End()
}

// requestedModel is the model a request asks for: the body's "model"
// (Anthropic, OpenAI) or the path's models/<m>:<verb> (Gemini); "" if
// neither says.
func requestedModel(r *http.Request) string {
	if _, rest, ok := strings.Cut(r.URL.Path, "/models/"); ok {
		if m, _, ok := strings.Cut(rest, ":"); ok && m != "" {
			return m
		}
	}
	if r.Body == nil || r.ContentLength > maxModelPeek || !strings.Contains(r.Header.Get("Content-Type"), "json") {
		return ""
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxModelPeek+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) > maxModelPeek {
		return ""
	}
	var doc struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	return doc.Model
}

// readCloser reads from one reader and closes another: a body whose start
// was read ahead.
type readCloser struct {
	io.Reader
	c io.Closer
}

func (rc readCloser) Close() error { return rc.c.Close() }
