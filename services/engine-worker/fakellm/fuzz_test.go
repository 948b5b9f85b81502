package fakellm

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The fuzz targets feed arbitrary bodies to a parser and then to the whole
// handler, which must answer every one with a well-formed status and, for a
// stream it accepted, end with the format's terminal event. Seed corpora are
// in testdata/fuzz/<target>.

func fuzzServer() *Server {
	return New(Config{SlowFor: time.Millisecond, KeepAlive: time.Millisecond})
}

// fuzzHandler posts body to path and checks the answer's invariants; for a
// stream, terminal must accept its last event.
func fuzzHandler(t *testing.T, s *Server, path string, body []byte, stream bool, terminal func(last string) bool) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body))))
	switch rec.Code {
	case http.StatusOK:
		if last := lastEvent(rec.Body.String()); stream && !terminal(last) {
			t.Fatalf("stream for %q ends with the wrong event %q", body, last)
		}
	case http.StatusBadRequest, http.StatusInternalServerError:
		if !strings.Contains(rec.Body.String(), `"error"`) {
			t.Fatalf("status %d without an error body: %s", rec.Code, rec.Body)
		}
	default:
		t.Fatalf("status %d for %q", rec.Code, body)
	}
}

// lastEvent is the last SSE event block of a stream, without its blank line.
func lastEvent(stream string) string {
	stream = strings.TrimSuffix(stream, "\n\n")
	if i := strings.LastIndex(stream, "\n\n"); i >= 0 {
		return stream[i+2:]
	}
	return stream
}

func hasPrefix(prefix string) func(string) bool {
	return func(last string) bool { return strings.HasPrefix(last, prefix) }
}

func FuzzParseAnthropic(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"@@TOOL@@"}],"tools":[{"name":"Bash","input_schema":{"properties":{"command":{"type":"string"}}}}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"ok"}]}]}]}`))
	// Claude Code's --json-schema request, and the API's own ways to ask for JSON.
	f.Add([]byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"Write it."}]}],"output_config":{"effort":"low"},"tools":[{"name":"StructuredOutput","input_schema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"tool","name":"emit"},"tools":[{"name":"emit","input_schema":{"type":"array"}}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"@@JSON_TRUNCATED@@"}],"output_format":{"type":"json_schema","schema":{"enum":[1]}}}`))
	s := fuzzServer()
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := parseAnthropic(body)
		if err != nil {
			return
		}
		decide(tr, findMarkers(tr.user))
		fuzzHandler(t, s, "/v1/messages", body, tr.stream, hasPrefix("event: message_stop\n"))
	})
}

func FuzzParseChat(f *testing.F) {
	f.Add([]byte(`{"stream":true,"messages":[{"role":"user","content":"@@THINK@@ @@TOOL@@"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"properties":{"command":{"type":"array"}}}}}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"tool","content":"ok"}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object","properties":{"a":{"type":"string"}}}}}}`))
	f.Add([]byte("{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"@@JSON_FENCED@@ Match this JSON schema:\\n```json\\n{\\\"type\\\":\\\"object\\\"}\\n```\"}]}"))
	s := fuzzServer()
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := parseChat(body)
		if err != nil {
			return
		}
		decide(tr, findMarkers(tr.user))
		fuzzHandler(t, s, "/v1/chat/completions", body, tr.stream, hasPrefix("data: [DONE]"))
	})
}

func FuzzParseResponses(f *testing.F) {
	f.Add([]byte(`{"stream":true,"input":"@@ASK@@","tools":[{"type":"function","name":"request_user_input","parameters":{"properties":{"questions":{"type":"array","items":{"type":"object"}}}}}]}`))
	f.Add([]byte(`{"input":[{"role":"user","content":[{"type":"input_text","text":"@@TOOL@@"}]},{"type":"function_call_output","output":"ok"}]}`))
	f.Add([]byte(`{"stream":true,"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object","required":["a"],"properties":{"a":{"type":"integer"}}}}}}`))
	s := fuzzServer()
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := parseResponses(body)
		if err != nil {
			return
		}
		decide(tr, findMarkers(tr.user))
		fuzzHandler(t, s, "/v1/responses", body, tr.stream, hasPrefix("event: response.completed\n"))
	})
}

func FuzzParseGemini(f *testing.F) {
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"@@MCP@@"}]}],"tools":[{"functionDeclarations":[{"name":"mcp_probe_echo","parameters":{"type":"OBJECT"}}]}]}`))
	f.Add([]byte(`{"contents":[{"parts":[{"text":"route"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"a":{"type":"array","items":{"enum":[1]}}}}}}`))
	s := fuzzServer()
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := parseGemini(body)
		if err != nil {
			return
		}
		decide(tr, findMarkers(tr.user))
		fuzzHandler(t, s, "/v1beta/models/m:streamGenerateContent?alt=sse", body, true, func(last string) bool {
			return strings.HasPrefix(last, "data: ") && strings.Contains(last, `"finishReason":"STOP"`)
		})
	})
}
