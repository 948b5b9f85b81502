package fakellm_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"clopen.dev/services/engine-worker/fakellm"
)

// postResponses sends a non-streamed Responses request and returns its
// output items.
func postResponses(t *testing.T, f *fixture, body string) []map[string]any {
	t.Helper()
	resp, err := f.hc.Post(f.url+"/v1/responses", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Output []map[string]any `json:"output"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/responses = %d, %v", resp.StatusCode, err)
	}
	return out.Output
}

// TestResponsesToolSearch: with MCP tools deferred behind a client
// tool_search (Codex), @@MCP@@ searches first, then calls the echo tool the
// search loaded, in its namespace.
func TestResponsesToolSearch(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	user := `{"type":"message","role":"user","content":[{"type":"input_text","text":"@@MCP@@ echo"}]}`
	tools := `"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"}},{"type":"tool_search","execution":"client"}]`

	out := postResponses(t, f, `{"model":"m","input":[`+user+`],`+tools+`}`)
	last := out[len(out)-1]
	if last["type"] != "tool_search_call" || last["execution"] != "client" || last["call_id"] == "" {
		t.Fatalf("first answer's last item = %v, want a client tool_search_call", last)
	}
	args, _ := json.Marshal(last["arguments"])
	if string(args) != `{"limit":8,"query":"echo"}` {
		t.Errorf("tool_search arguments = %s", args)
	}

	search := `{"type":"tool_search_output","call_id":"search_1","execution":"client","status":"completed","tools":[` +
		`{"type":"namespace","name":"mcp__probe","tools":[{"type":"function","name":"echo","parameters":{"type":"object","properties":{"text":{"type":"string"}}}}]}]}`
	out = postResponses(t, f, `{"model":"m","input":[`+user+`,`+search+`],`+tools+`}`)
	last = out[len(out)-1]
	if last["type"] != "function_call" || last["name"] != "echo" || last["namespace"] != "mcp__probe" || last["arguments"] != `{"text":"hi"}` {
		t.Errorf("second answer's last item = %v, want echo{text:hi} called in namespace mcp__probe", last)
	}
}
