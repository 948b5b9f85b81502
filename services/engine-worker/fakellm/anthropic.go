package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
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
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Content   json.RawMessage `json:"content"`
	ID        string          `json:"id"`          // tool_use
	Name      string          `json:"name"`        // tool_use
	ToolUseID string          `json:"tool_use_id"` // tool_result
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
	searches := map[string]bool{} // ids of the ToolSearch calls made so far
	for _, m := range req.Messages {
		var blocks []anthropicBlock
		if m.Role != "user" {
			if json.Unmarshal(m.Content, &blocks) == nil {
				for _, b := range blocks {
					if b.Type == "tool_use" && b.Name == toolSearchTool {
						searches[b.ID] = true
					}
				}
			}
			t.deferred = append(t.deferred, deferredNames(m.Content)...)
			continue
		}
		t.deferred = append(t.deferred, deferredNames(m.Content)...)
		if json.Unmarshal(m.Content, &blocks) != nil {
			t.userTurn(textOf(m.Content))
			continue
		}
		var results []anthropicBlock
		text, reminder, searched := "", "", false
		for _, b := range blocks {
			switch {
			case b.Type == "tool_result" && searches[b.ToolUseID]:
				searched = true // the search loaded tools; the turn goes on
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
		case searched: // with Claude Code's "Tool loaded." beside it
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
	if _, ok := findTool(t.tools, []string{toolSearchTool}); !ok {
		t.deferred = nil // named, but with no way to load them
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

// Claude Code defers MCP tools behind its ToolSearch tool: a request names
// them in a message ("… available via ToolSearch …: mcp__s__echo …") and
// offers only ToolSearch. For @@MCP@@ fakellm calls ToolSearch with
// "select:<name>"; Claude Code answers with a tool_result (which is not the
// turn's result) and offers the selected tool from the next request on.
const toolSearchTool = "ToolSearch"

// mcpNameRe finds MCP tool names (mcp__<server>__<tool>) in a message.
var mcpNameRe = regexp.MustCompile(`mcp__[A-Za-z0-9_-]+__[A-Za-z0-9_-]+`)

// deferredNames returns the MCP tool names a message's content names.
func deferredNames(content json.RawMessage) []string {
	return mcpNameRe.FindAllString(string(content), -1)
}
