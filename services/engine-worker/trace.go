package worker

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"clopen.dev/pkg/events"
)

// runTrace makes a run's spans from what its engine emits, under the run's
// invoke_agent span: a chat span for each model answer (from the previous
// answer or tool result to this one) and an execute_tool span for each tool
// call, from its use to its result. Deltas make no spans.
type runTrace struct {
	mu    sync.Mutex
	span  trace.Span // the run's
	ctx   context.Context
	model string
	last  trace.Span            // the open chat span, nil between answers
	tools map[string]trace.Span // open tool calls by id
}

func newRunTrace(ctx context.Context, model string) *runTrace {
	t := &runTrace{span: trace.SpanFromContext(ctx), ctx: ctx, model: model, tools: map[string]trace.Span{}}
	t.openChat()
	return t
}

// parent is the context a model call the proxy sees now belongs under:
// the chat span of the answer being awaited, else the run's.
func (t *runTrace) parent() context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last != nil {
		return trace.ContextWithSpan(t.ctx, t.last)
	}
	return t.ctx
}

// openChat starts the span of the next model answer.
func (t *runTrace) openChat() {
	_, t.last = tracer.Start(t.ctx, "chat "+t.model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", t.model)))
}

// observe reads one published output.
func (t *runTrace) observe(o events.Output) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch o := o.(type) {
	case events.SystemInit:
		if o.Model != "" {
			t.span.SetAttributes(attribute.String("gen_ai.response.model", o.Model))
		}
	case events.AssistantMessage:
		if t.last == nil {
			t.openChat()
		}
		if o.StopReason != "" {
			t.last.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{string(o.StopReason)}))
		}
		if u := o.Usage; u != nil {
			t.last.SetAttributes(usageAttrs(*u)...)
		}
		t.last.End()
		t.last = nil
		for _, b := range o.Content {
			if use, ok := b.(events.ToolUseBlock); ok && use.ID != "" {
				_, s := tracer.Start(t.ctx, "execute_tool "+use.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
					attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", use.Name),
					attribute.String("gen_ai.tool.call.id", use.ID)))
				t.tools[use.ID] = s
			}
		}
	case events.UserMessage:
		for _, b := range o.Content {
			res, ok := b.(events.ToolResultBlock)
			if !ok {
				continue
			}
			if s, ok := t.tools[res.ToolUseID]; ok {
				if res.IsError {
					s.SetStatus(codes.Error, "the tool reported an error")
					s.SetAttributes(attribute.String("error.type", "tool_error"))
				}
				s.End()
				delete(t.tools, res.ToolUseID)
			}
		}
		if t.last == nil {
			t.openChat() // the model answers the tool results next
		}
	}
}

// end closes what is still open and gives the run's span its outcome: the
// usage and stop reason of its result, and error status with error.type
// when the run failed.
func (t *runTrace) end(state events.RunStateName, kind events.ErrorKind, errMsg string, res *events.Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, s := range t.tools {
		s.SetAttributes(attribute.Bool("clopen.tool.unfinished", true))
		s.End()
		delete(t.tools, id)
	}
	if t.last != nil {
		// A chat span with no answer: the run ended while the model was
		// working (cancelled, failed). Kept, marked, so the wait shows.
		t.last.SetAttributes(attribute.Bool("clopen.chat.unanswered", true))
		t.last.End()
		t.last = nil
	}
	if res != nil {
		t.span.SetAttributes(usageAttrs(res.Usage)...)
		if res.StopReason != "" {
			t.span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{res.StopReason}))
		}
	}
	t.span.SetAttributes(attribute.String("clopen.run_state", string(state)))
	if state == events.RunFailed {
		t.span.SetAttributes(attribute.String("error.type", string(kind)))
		t.span.SetStatus(codes.Error, errMsg)
	}
}

// usageAttrs are u as the GenAI conventions count it: input includes the
// cache's reads and writes.
func usageAttrs(u events.TokenUsage) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens),
		attribute.Int64("gen_ai.usage.cache_read.input_tokens", u.CacheReadInputTokens),
		attribute.Int64("gen_ai.usage.cache_creation.input_tokens", u.CacheCreationInputTokens),
	}
}
