package fakellm

import (
	"context"
	"maps"
	"net/http"
	"time"
)

// outputItem pairs a step with the finished Responses item it becomes.
type outputItem struct {
	step step
	id   string
	done map[string]any
}

func responseItems(rep reply) []outputItem {
	items := make([]outputItem, 0, len(rep.steps))
	for _, st := range rep.steps {
		var it outputItem
		switch st.kind {
		case thinkingStep:
			it.id = newID("rs_")
			it.done = map[string]any{"type": "reasoning", "id": it.id,
				"summary": []any{map[string]any{"type": "summary_text", "text": st.text()}}}
		case textStep:
			it.id = newID("msg_")
			it.done = map[string]any{"type": "message", "id": it.id, "status": "completed", "role": "assistant",
				"content": []any{outputText(st.text())}}
		case toolStep:
			it.id = "fc_" + st.id
			it.done = map[string]any{"type": "function_call", "id": it.id, "call_id": "call_" + st.id,
				"name": st.tool, "arguments": st.args, "status": "completed"}
			if st.ns != "" {
				it.done["namespace"] = st.ns
			}
		case searchStep:
			it.id = "tsc_" + st.id
			it.done = searchCall(it.id, st)
		}
		it.step = st
		items = append(items, it)
	}
	return items
}

func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

// responseObject is the Response as the non-streaming answer and as the
// payload of response.created, .in_progress and .completed.
func responseObject(id string, t turn, rep reply, status string, items []outputItem) map[string]any {
	output := make([]any, 0, len(items))
	reasoning := 0
	for _, it := range items {
		output = append(output, it.done)
		if it.step.kind == thinkingStep {
			reasoning += (len(it.step.text()) + 3) / 4
		}
	}
	r := map[string]any{
		"id": id, "object": "response", "created_at": time.Now().Unix(), "status": status,
		"model": t.model, "output": output, "error": nil, "incomplete_details": nil,
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
	}
	if status == "completed" {
		r["usage"] = map[string]any{
			"input_tokens": rep.inputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": rep.outputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": reasoning},
			"total_tokens": rep.inputTokens + rep.outputTokens,
		}
	}
	return r
}

// responsesStream writes the Responses event sequence. The events clients
// cannot do without are response.output_item.done (items exist from it on)
// and response.completed; the others are sent as the real API sends them.
func (s *Server) responsesStream(ctx context.Context, w http.ResponseWriter, t turn, rep reply, items []outputItem) error {
	sw := startSSE(w)
	seq := 0
	ev := func(name string, v map[string]any) error {
		v["type"], v["sequence_number"] = name, seq
		seq++
		return sw.event(ctx, name, v)
	}
	pace := s.pacer(rep, func(ctx context.Context) error { return sw.comment(ctx, "keep-alive") })

	id := newID("resp_")
	object := func(status string, items []outputItem) map[string]any {
		return responseObject(id, t, rep, status, items)
	}
	if err := ev("response.created", map[string]any{"response": object("in_progress", nil)}); err != nil {
		return err
	}
	if err := ev("response.in_progress", map[string]any{"response": object("in_progress", nil)}); err != nil {
		return err
	}
	for oi, it := range items {
		added := maps.Clone(it.done)
		switch it.step.kind {
		case thinkingStep:
			added["summary"] = []any{}
		case textStep:
			added["status"], added["content"] = "in_progress", []any{}
		case toolStep:
			added["status"], added["arguments"] = "in_progress", ""
		case searchStep:
			added["status"] = "in_progress"
		}
		if err := ev("response.output_item.added", map[string]any{"output_index": oi, "item": added}); err != nil {
			return err
		}
		if err := responsesItemBody(ctx, ev, pace, oi, it); err != nil {
			return err
		}
		if err := ev("response.output_item.done", map[string]any{"output_index": oi, "item": it.done}); err != nil {
			return err
		}
	}
	return ev("response.completed", map[string]any{"response": object("completed", items)})
}

// responsesItemBody writes the events between an item's added and done.
func responsesItemBody(ctx context.Context, ev func(string, map[string]any) error, pace *pacer, oi int, it outputItem) error {
	at := func(kv ...any) map[string]any {
		m := map[string]any{"output_index": oi, "item_id": it.id}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	text := it.step.text()
	switch it.step.kind {
	case thinkingStep:
		summary := map[string]any{"type": "summary_text", "text": text}
		if err := ev("response.reasoning_summary_part.added", at("summary_index", 0, "part", map[string]any{"type": "summary_text", "text": ""})); err != nil {
			return err
		}
		for _, d := range it.step.deltas {
			if err := ev("response.reasoning_summary_text.delta", at("summary_index", 0, "delta", d)); err != nil {
				return err
			}
		}
		if err := ev("response.reasoning_summary_text.done", at("summary_index", 0, "text", text)); err != nil {
			return err
		}
		return ev("response.reasoning_summary_part.done", at("summary_index", 0, "part", summary))
	case textStep:
		if err := ev("response.content_part.added", at("content_index", 0, "part", outputText(""))); err != nil {
			return err
		}
		for _, d := range it.step.deltas {
			if err := ev("response.output_text.delta", at("content_index", 0, "delta", d, "logprobs", []any{})); err != nil {
				return err
			}
			if err := pace.afterTextDelta(ctx); err != nil {
				return err
			}
		}
		if err := ev("response.output_text.done", at("content_index", 0, "text", text, "logprobs", []any{})); err != nil {
			return err
		}
		return ev("response.content_part.done", at("content_index", 0, "part", outputText(text)))
	case searchStep:
		return nil // the call is whole in its item
	default:
		for _, p := range pieces(it.step.args, 3) {
			if err := ev("response.function_call_arguments.delta", at("delta", p)); err != nil {
				return err
			}
		}
		return ev("response.function_call_arguments.done", at("name", it.step.tool, "arguments", it.step.args))
	}
}
