package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type anthropicRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
	OutputFormat *jsonFormat `json:"output_format"`
	OutputConfig *struct {
		Format *jsonFormat `json:"format"`
	} `json:"output_config"`
}

type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`
}

// parseAnthropic reads a Messages API request. In a user message, tool_result
// blocks make it a tool result; otherwise its last text block is the turn.
// Hosts prepend <system-reminder> blocks and merge queued turns into one
// message, so only the last block that is not a reminder counts.
func parseAnthropic(body []byte) (turn, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return turn{}, fmt.Errorf("parse anthropic request: %w", err)
	}
	t := turn{model: req.Model, stream: req.Stream}
	if s := textOf(req.System); s != "" {
		t.context = append(t.context, s)
	}
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		var blocks []anthropicBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			t.userTurn(textOf(m.Content))
			continue
		}
		var results []anthropicBlock
		text, reminder := "", ""
		for _, b := range blocks {
			switch {
			case b.Type == "tool_result":
				results = append(results, b)
			case b.Type == "text" && strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>"):
				reminder = b.Text
				t.context = append(t.context, b.Text)
			case b.Type == "text" && strings.TrimSpace(b.Text) != "":
				text = b.Text
			}
		}
		switch {
		case len(results) > 0:
			t.toolResult(textOf(results[len(results)-1].Content))
		case text != "":
			t.userTurn(text)
		default:
			t.userTurn(reminder)
		}
	}
	for _, tl := range req.Tools {
		if tl.Name != "" {
			t.tools = append(t.tools, tool{name: tl.Name, schema: tl.InputSchema})
		}
	}
	req.OutputFormat.apply(&t)
	if req.OutputConfig != nil {
		req.OutputConfig.Format.apply(&t)
	}
	switch _, structured := findTool(t.tools, []string{structuredOutputTool}); {
	case req.ToolChoice != nil && req.ToolChoice.Type == "tool" && req.ToolChoice.Name != "":
		t.forceTool = req.ToolChoice.Name
	case structured:
		t.forceTool = structuredOutputTool
	}
	return t, nil
}

// anthropic serves POST /v1/messages.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	t, rep, ok := s.begin(w, r, formatAnthropic, parseAnthropic)
	if !ok {
		return
	}
	if !t.stream {
		writeJSON(w, http.StatusOK, anthropicMessage(t, rep))
		return
	}
	s.streamEnded(r, s.anthropicStream(r.Context(), w, t, rep))
}

// anthropicCountTokens serves POST /v1/messages/count_tokens, which
// claude-code-acp calls.
func (s *Server) anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	_, rep, ok := s.begin(w, r, formatAnthropic, parseAnthropic)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": rep.inputTokens})
}
