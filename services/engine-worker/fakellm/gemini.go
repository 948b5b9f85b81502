package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             *string `json:"text"`
			Thought          bool    `json:"thought"`
			FunctionResponse *struct {
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig *struct {
		ResponseMIMEType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

// parseGemini reads a generateContent request: the last user content is the
// turn, and functionResponse parts after it are tool results. The model and
// whether to stream come from the URL, not the body.
func parseGemini(body []byte) (turn, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return turn{}, fmt.Errorf("parse gemini request: %w", err)
	}
	var t turn
	for _, c := range req.Contents {
		var texts []string
		var result *string
		for _, p := range c.Parts {
			switch {
			case p.FunctionResponse != nil:
				s := geminiResultText(p.FunctionResponse.Response)
				result = &s
			case p.Text != nil && !p.Thought:
				texts = append(texts, *p.Text)
			}
		}
		switch {
		case result != nil:
			t.toolResult(*result)
		case c.Role == "user" || c.Role == "":
			t.userTurn(strings.Join(texts, "\n"))
		}
	}
	for _, group := range req.Tools {
		for _, fd := range group.FunctionDeclarations {
			if fd.Name == "" {
				continue
			}
			sch := fd.ParametersJSONSchema
			if len(sch) == 0 {
				sch = fd.Parameters
			}
			t.tools = append(t.tools, tool{name: fd.Name, schema: sch})
		}
	}
	if gc := req.GenerationConfig; gc != nil && strings.HasPrefix(strings.ToLower(gc.ResponseMIMEType), "application/json") {
		t.jsonMode = true
		t.jsonSchema = gc.ResponseJSONSchema
		if len(t.jsonSchema) == 0 {
			t.jsonSchema = gc.ResponseSchema
		}
	}
	return t, nil
}

// geminiResultText takes the text out of a functionResponse.response, which
// Gemini CLI sends as {"output": "..."}; other shapes are quoted as JSON.
func geminiResultText(raw json.RawMessage) string {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) == nil {
		for _, k := range []string{"output", "result", "content", "error"} {
			if s, ok := obj[k].(string); ok {
				return s
			}
		}
	}
	if s := textOf(raw); s != "" {
		return s
	}
	return string(raw)
}

// gemini serves POST /v1beta/models/{model}:{method}.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	model, method, _ := strings.Cut(p[strings.LastIndex(p, "/models/")+len("/models/"):], ":")
	stream := method == "streamGenerateContent"
	if !stream && method != "generateContent" && method != "countTokens" {
		s.notFound(w, r)
		return
	}
	parse := func(body []byte) (turn, error) {
		t, err := parseGemini(body)
		t.model, t.stream = model, stream
		return t, err
	}
	t, rep, ok := s.begin(w, r, formatGemini, parse)
	switch {
	case !ok:
	case method == "countTokens":
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": rep.inputTokens})
	case !stream:
		writeJSON(w, http.StatusOK, geminiResponse(t, rep))
	case r.URL.Query().Get("alt") != "sse":
		// Without alt=sse the API streams one JSON array; sent here in one piece.
		writeJSON(w, http.StatusOK, geminiChunks(t, rep))
	default:
		s.streamEnded(r, s.geminiStream(r.Context(), w, t, rep))
	}
}
