package fakellm

import (
	"net/http"
	"time"
)

// modelIDs are the models the lists advertise. No client we know validates a
// model name against the server, so any name works in requests.
var modelIDs = []string{"fakellm", "fakellm-thinking"}

// models serves GET /v1/models in a shape both OpenAI and Anthropic clients
// read: OpenAI looks at id/object/created/owned_by, Anthropic at
// id/type/display_name/created_at and the paging fields.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	s.record(Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Format: string(formatModels)})
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	data := make([]map[string]any, 0, len(modelIDs))
	for _, id := range modelIDs {
		data = append(data, map[string]any{
			"id": id, "object": "model", "created": created.Unix(), "owned_by": "fakellm",
			"type": "model", "display_name": id, "created_at": created.Format(time.RFC3339),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": data, "has_more": false,
		"first_id": modelIDs[0], "last_id": modelIDs[len(modelIDs)-1],
	})
}

// geminiModels serves GET /v1beta/models.
func (s *Server) geminiModels(w http.ResponseWriter, r *http.Request) {
	s.record(Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Format: string(formatModels)})
	models := make([]map[string]any, 0, len(modelIDs))
	for _, id := range modelIDs {
		models = append(models, map[string]any{
			"name": "models/" + id, "displayName": id, "version": "1",
			"inputTokenLimit": 1_000_000, "outputTokenLimit": 65_536,
			"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}
