package fakellm

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// The messages of the forced errors; rateLimitMessage takes the
// Retry-After seconds.
const (
	forcedErrorMessage = "fakellm: @@ERROR@@ forced a server error"
	slowErrorMessage   = "fakellm: @@SLOW_ERROR@@ forced a server error after a delay"
	rateLimitMessage   = "fakellm: @@RATELIMIT@@ rate limit reached; retry after %ds"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"fakellm: encode response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b) // a client that left needs no answer
}

// writeError answers with status and a body shaped like the provider's error
// JSON, so each SDK turns it into its own error type with msg in it.
func writeError(w http.ResponseWriter, f format, status int, msg string) {
	switch f {
	case formatAnthropic:
		writeJSON(w, status, map[string]any{
			"type":  "error",
			"error": map[string]any{"type": anthropicErrorType(status), "message": msg},
		})
	case formatChat, formatResponses, formatModels:
		writeJSON(w, status, map[string]any{
			"error": map[string]any{"message": msg, "type": openAIErrorType(status), "param": nil, "code": openAIErrorCode(status)},
		})
	case formatGemini:
		writeJSON(w, status, map[string]any{
			"error": map[string]any{"code": status, "message": msg, "status": googleStatus(status)},
		})
	default:
		// The format is unknown, so the body satisfies both the Anthropic and
		// the OpenAI readers: each looks only at the fields it knows.
		writeJSON(w, status, map[string]any{
			"type": "error",
			"error": map[string]any{"type": anthropicErrorType(status), "message": msg,
				"code": openAIErrorCode(status), "param": nil},
		})
	}
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	default:
		return "api_error"
	}
}

func openAIErrorType(status int) string {
	switch {
	case status >= 500:
		return "server_error"
	case status == http.StatusTooManyRequests:
		return "requests"
	}
	return "invalid_request_error"
}

func openAIErrorCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_body"
	case http.StatusNotFound:
		return "unknown_url"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	default:
		return "internal_error"
	}
}

func googleStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	default:
		return "INTERNAL"
	}
}
