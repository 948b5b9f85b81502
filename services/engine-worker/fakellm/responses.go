package fakellm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

type responsesRequest struct {
	Model  string          `json:"model"`
	Stream bool            `json:"stream"`
	Input  json.RawMessage `json:"input"`
	Tools  []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
		Execution  string          `json:"execution"` // tool_search: "client" or "server"
	} `json:"tools"`
	Text *struct {
		Format *jsonFormat `json:"format"`
	} `json:"text"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
	Tools   json.RawMessage `json:"tools"` // tool_search_output
}

// parseResponses reads a Responses API request. Input is a string (one user
// turn) or a list of items: user messages are turns, and *_call_output items
// after the last one are tool results. Only function tools can be called.
func parseResponses(body []byte) (turn, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return turn{}, fmt.Errorf("parse responses request: %w", err)
	}
	t := turn{model: req.Model, stream: req.Stream}
	switch in := bytes.TrimSpace(req.Input); {
	case len(in) == 0 || bytes.Equal(in, []byte("null")):
	case in[0] == '"':
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return turn{}, fmt.Errorf("parse responses input: %w", err)
		}
		t.userTurn(s)
	case in[0] == '[':
		var items []responsesItem
		if err := json.Unmarshal(in, &items); err != nil {
			return turn{}, fmt.Errorf("parse responses input: %w", err)
		}
		for _, it := range items {
			switch it.Type {
			case "message", "":
				if it.Role == "user" {
					t.userTurn(textOf(it.Content))
				}
			case "function_call_output", "custom_tool_call_output", "local_shell_call_output", "mcp_call_output":
				t.toolResult(textOf(it.Output))
			case "tool_search_output":
				t.tools = append(t.tools, searchedTools(it.Tools)...)
			}
		}
	default:
		return turn{}, errors.New("parse responses input: want a string or a list of items")
	}
	var offered []tool
	for _, tl := range req.Tools {
		switch {
		case tl.Type == "function" && tl.Name != "":
			offered = append(offered, tool{name: tl.Name, schema: tl.Parameters})
		case tl.Type == "tool_search" && tl.Execution == "client":
			t.toolSearch = true
		}
	}
	t.tools = append(offered, t.tools...) // the offered ones first, then those a search loaded
	if req.Text != nil {
		req.Text.Format.apply(&t)
	}
	return t, nil
}

// responses serves POST /v1/responses.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	t, rep, ok := s.begin(w, r, formatResponses, parseResponses)
	if !ok {
		return
	}
	items := responseItems(rep)
	if !t.stream {
		writeJSON(w, http.StatusOK, responseObject(newID("resp_"), t, rep, "completed", items))
		return
	}
	s.streamEnded(r, s.responsesStream(r.Context(), w, t, rep, items))
}
