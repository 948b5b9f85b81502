package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
)

type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function *struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
		// Some clients send the function fields at the top level.
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"tools"`
	ResponseFormat *jsonFormat `json:"response_format"`
}

// parseChat reads a Chat Completions request: the last "user" message is the
// turn, and a "tool" message after it is a tool result.
func parseChat(body []byte) (turn, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return turn{}, fmt.Errorf("parse chat completions request: %w", err)
	}
	t := turn{model: req.Model, stream: req.Stream}
	t.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			t.userTurn(textOf(m.Content))
		case "tool", "function":
			t.toolResult(textOf(m.Content))
		}
	}
	for _, tl := range req.Tools {
		name, params := tl.Name, tl.Parameters
		if tl.Function != nil {
			name, params = tl.Function.Name, tl.Function.Parameters
		}
		if name != "" {
			t.tools = append(t.tools, tool{name: name, schema: params})
		}
	}
	req.ResponseFormat.apply(&t)
	return t, nil
}

// chat serves POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	t, rep, ok := s.begin(w, r, formatChat, parseChat)
	if !ok {
		return
	}
	if !t.stream {
		writeJSON(w, http.StatusOK, chatCompletion(t, rep))
		return
	}
	s.streamEnded(r, s.chatStream(r.Context(), w, t, rep))
}
