package fakellm

import (
	"context"
	"net/http"
	"strings"
	"time"
)

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Delta        any            `json:"delta,omitempty"`   // stream chunks; {} must stay, so not a map
	Message      map[string]any `json:"message,omitempty"` // non-streaming answers
	FinishReason *string        `json:"finish_reason"`
}

type chatBody struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage,omitempty"`
}

func chatFinishReason(rep reply) string {
	if rep.calledTool() {
		return "tool_calls"
	}
	return "stop"
}

func chatUsageOf(rep reply) *chatUsage {
	return &chatUsage{rep.inputTokens, rep.outputTokens, rep.inputTokens + rep.outputTokens}
}

// chatCompletion is the non-streaming answer.
func chatCompletion(t turn, rep reply) chatBody {
	var text, reasoning strings.Builder
	var calls []map[string]any
	for _, st := range rep.steps {
		switch st.kind {
		case thinkingStep:
			reasoning.WriteString(st.text())
		case textStep:
			text.WriteString(st.text())
		case toolStep:
			calls = append(calls, map[string]any{"id": "call_" + st.id, "type": "function",
				"function": map[string]any{"name": st.tool, "arguments": st.args}})
		}
	}
	msg := map[string]any{"role": "assistant", "content": text.String()}
	if reasoning.Len() > 0 {
		msg["reasoning_content"] = reasoning.String()
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	finish := chatFinishReason(rep)
	return chatBody{
		ID: newID("chatcmpl-"), Object: "chat.completion", Created: time.Now().Unix(), Model: t.model,
		Choices: []chatChoice{{Message: msg, FinishReason: &finish}},
		Usage:   chatUsageOf(rep),
	}
}

// chatStream writes chat.completion.chunk events: the role, reasoning_content
// and content deltas, tool_calls deltas, a chunk with finish_reason, a usage
// chunk when stream_options.include_usage asks for one, and [DONE]. Without
// include_usage the usage rides on the finish_reason chunk, where clients
// that read it look and others ignore it.
func (s *Server) chatStream(ctx context.Context, w http.ResponseWriter, t turn, rep reply) error {
	sw := startSSE(w)
	base := chatBody{ID: newID("chatcmpl-"), Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: t.model}
	chunk := func(delta map[string]any, finish *string, usage *chatUsage) error {
		c := base
		if delta == nil {
			delta = map[string]any{}
		}
		c.Choices = []chatChoice{{Delta: delta, FinishReason: finish}}
		c.Usage = usage
		return sw.event(ctx, "", c)
	}
	pace := s.pacer(rep, func(ctx context.Context) error { return sw.comment(ctx, "keep-alive") })

	if err := chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil); err != nil {
		return err
	}
	calls := 0
	for _, st := range rep.steps {
		for _, d := range st.deltas {
			key := "content"
			if st.kind == thinkingStep {
				key = "reasoning_content"
			}
			if err := chunk(map[string]any{key: d}, nil, nil); err != nil {
				return err
			}
			if st.kind == textStep {
				if err := pace.afterTextDelta(ctx); err != nil {
					return err
				}
			}
		}
		if st.kind != toolStep {
			continue
		}
		head := map[string]any{"index": calls, "id": "call_" + st.id, "type": "function",
			"function": map[string]any{"name": st.tool, "arguments": ""}}
		if err := chunk(map[string]any{"tool_calls": []any{head}}, nil, nil); err != nil {
			return err
		}
		for _, p := range pieces(st.args, 3) {
			part := map[string]any{"index": calls, "function": map[string]any{"arguments": p}}
			if err := chunk(map[string]any{"tool_calls": []any{part}}, nil, nil); err != nil {
				return err
			}
		}
		calls++
	}
	finish := chatFinishReason(rep)
	if t.includeUsage {
		if err := chunk(nil, &finish, nil); err != nil {
			return err
		}
		c := base
		c.Choices, c.Usage = []chatChoice{}, chatUsageOf(rep)
		if err := sw.event(ctx, "", c); err != nil {
			return err
		}
	} else if err := chunk(nil, &finish, chatUsageOf(rep)); err != nil {
		return err
	}
	return sw.raw(ctx, "", "[DONE]")
}
