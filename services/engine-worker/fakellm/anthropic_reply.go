package fakellm

import (
	"context"
	"encoding/json"
	"net/http"
)

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

type anthropicMsg struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []map[string]any `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

func anthropicStopReason(rep reply) string {
	if rep.calledTool() {
		return "tool_use"
	}
	return "end_turn"
}

// anthropicMessage is the non-streaming answer.
func anthropicMessage(t turn, rep reply) anthropicMsg {
	stop := anthropicStopReason(rep)
	msg := anthropicMsg{
		ID: newID("msg_"), Type: "message", Role: "assistant", Model: t.model,
		Content: []map[string]any{}, StopReason: &stop,
		Usage: anthropicUsage{InputTokens: rep.inputTokens, OutputTokens: rep.outputTokens},
	}
	for _, st := range rep.steps {
		switch st.kind {
		case thinkingStep:
			msg.Content = append(msg.Content, map[string]any{"type": "thinking", "thinking": st.text(), "signature": thinkingSig})
		case textStep:
			msg.Content = append(msg.Content, map[string]any{"type": "text", "text": st.text()})
		case toolStep:
			msg.Content = append(msg.Content, map[string]any{"type": "tool_use", "id": "toolu_" + st.id, "name": st.tool, "input": json.RawMessage(st.args)})
		}
	}
	return msg
}

// anthropicStream writes the Messages event sequence: message_start (with
// usage), ping, then per block content_block_start, deltas and
// content_block_stop, then message_delta (stop reason, usage) and message_stop.
func (s *Server) anthropicStream(ctx context.Context, w http.ResponseWriter, t turn, rep reply) error {
	sw := startSSE(w)
	ev := func(name string, v map[string]any) error {
		v["type"] = name
		return sw.event(ctx, name, v)
	}
	pace := s.pacer(rep, func(ctx context.Context) error {
		return sw.event(ctx, "ping", map[string]any{"type": "ping"})
	})

	start := anthropicMessage(t, reply{})
	start.Usage = anthropicUsage{InputTokens: rep.inputTokens, OutputTokens: 1}
	start.StopReason = nil
	if err := ev("message_start", map[string]any{"message": start}); err != nil {
		return err
	}
	if err := ev("ping", map[string]any{}); err != nil {
		return err
	}
	for i, st := range rep.steps {
		if err := writeAnthropicBlock(ctx, ev, pace, i, st); err != nil {
			return err
		}
		if err := ev("content_block_stop", map[string]any{"index": i}); err != nil {
			return err
		}
	}
	err := ev("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": anthropicStopReason(rep), "stop_sequence": nil},
		"usage": anthropicUsage{InputTokens: rep.inputTokens, OutputTokens: rep.outputTokens},
	})
	if err != nil {
		return err
	}
	return ev("message_stop", map[string]any{})
}

// writeAnthropicBlock writes one content block's start and deltas.
func writeAnthropicBlock(ctx context.Context, ev func(string, map[string]any) error, pace *pacer, i int, st step) error {
	delta := func(d map[string]any) error {
		return ev("content_block_delta", map[string]any{"index": i, "delta": d})
	}
	switch st.kind {
	case thinkingStep:
		if err := ev("content_block_start", map[string]any{"index": i,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}}); err != nil {
			return err
		}
		for _, d := range st.deltas {
			if err := delta(map[string]any{"type": "thinking_delta", "thinking": d}); err != nil {
				return err
			}
		}
		return delta(map[string]any{"type": "signature_delta", "signature": thinkingSig})
	case textStep:
		if err := ev("content_block_start", map[string]any{"index": i,
			"content_block": map[string]any{"type": "text", "text": ""}}); err != nil {
			return err
		}
		for _, d := range st.deltas {
			if err := delta(map[string]any{"type": "text_delta", "text": d}); err != nil {
				return err
			}
			if err := pace.afterTextDelta(ctx); err != nil {
				return err
			}
		}
		return nil
	default:
		if err := ev("content_block_start", map[string]any{"index": i,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_" + st.id, "name": st.tool, "input": map[string]any{}}}); err != nil {
			return err
		}
		for _, p := range pieces(st.args, 3) {
			if err := delta(map[string]any{"type": "input_json_delta", "partial_json": p}); err != nil {
				return err
			}
		}
		return nil
	}
}
