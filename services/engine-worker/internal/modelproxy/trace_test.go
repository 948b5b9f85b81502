package modelproxy_test

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// TestModelCallsTraced: each model call of a traced run is a client span
// under the parent the run names, with the model the body asked for, the
// status, the usage the response reported, and error.type when it failed;
// a call between runs makes none.
func TestModelCallsTraced(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	llm := httptest.NewServer(fakellm.New(fakellm.Config{RetryAfter: time.Second}))
	defer llm.Close()
	pool := &modelproxy.Pool{Dir: t.TempDir(), Options: loopback}
	defer pool.Close()
	c := newChat(t, pool, "t", "chat", modelproxy.Upstream{BaseURL: llm.URL, Scheme: modelproxy.AnthropicKey, Secret: "k"})
	call := func(prompt string) {
		if resp := c.stream(t, c.r.Token, prompt); resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}

	ctx, runSpan := tp.Tracer("test").Start(context.Background(), "invoke_agent test")
	sp := pool.Begin("t", "chat")
	sp.Traced(func() context.Context { return ctx }, "anthropic")
	call("hello")
	call("@@RATELIMIT@@ hi")
	sp.End(context.Background())
	call("after the run")
	runSpan.End()

	var calls []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "POST /v1/messages" {
			calls = append(calls, s)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d model call spans, want the run's 2", len(calls))
	}
	attr := func(s sdktrace.ReadOnlySpan, k string) attribute.Value {
		for _, kv := range s.Attributes() {
			if string(kv.Key) == k {
				return kv.Value
			}
		}
		return attribute.Value{}
	}
	ok, limited := calls[0], calls[1]
	for _, s := range calls {
		if s.Parent().SpanID() != runSpan.SpanContext().SpanID() {
			t.Errorf("call span's parent %v, want the run's span", s.Parent().SpanID())
		}
		if attr(s, "gen_ai.request.model").AsString() != "claude-sonnet-4-5" || attr(s, "gen_ai.provider.name").AsString() != "anthropic" {
			t.Errorf("call span model/provider = %v/%v", attr(s, "gen_ai.request.model"), attr(s, "gen_ai.provider.name"))
		}
	}
	if attr(ok, "http.response.status_code").AsInt64() != 200 || attr(ok, "gen_ai.usage.output_tokens").AsInt64() == 0 || ok.Status().Code == codes.Error {
		t.Errorf("answered call: status %v, output tokens %v, span status %v", attr(ok, "http.response.status_code"),
			attr(ok, "gen_ai.usage.output_tokens"), ok.Status())
	}
	if attr(limited, "http.response.status_code").AsInt64() != 429 || attr(limited, "error.type").AsString() != "429" || limited.Status().Code != codes.Error {
		t.Errorf("rate-limited call: status %v, error.type %v, span status %v", attr(limited, "http.response.status_code"),
			attr(limited, "error.type"), limited.Status())
	}
}
