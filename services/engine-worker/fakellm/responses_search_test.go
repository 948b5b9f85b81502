package fakellm_test

import (
	"encoding/json"
	"testing"

	"clopen.dev/services/engine-worker/fakellm"
)

// postResponses sends a non-streamed Responses request and returns its
// output items.
func postResponses(t *testing.T, f *fixture, body string) []map[string]any {
	t.Helper()
	return objects(postJSON(t, f, "/v1/responses", body)["output"])
}

// postMessages sends a non-streamed Messages request and returns its
// content blocks.
func postMessages(t *testing.T, f *fixture, body string) []map[string]any {
	t.Helper()
	return objects(postJSON(t, f, "/v1/messages", body)["content"])
}

// objects is a decoded JSON array of objects.
func objects(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, o := range list {
		m, _ := o.(map[string]any)
		out = append(out, m)
	}
	return out
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

// TestAnthropicToolSearch: with MCP tools deferred behind Claude Code's
// ToolSearch (named in a message, not offered), @@MCP@@ selects the echo
// tool first; the search's result (a tool_reference, with "Tool loaded."
// beside it) is not the turn's result, so the next answer calls the tool
// now offered, and only its result ends the turn. The messages are the
// shapes Claude Code 2.1 sends.
func TestAnthropicToolSearch(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	deferred := `{"role":"system","content":"The following deferred tools are now available via ToolSearch.\nWebFetch\nmcp__ev__echo\nmcp__ev__get-sum\n"}`
	user := `{"role":"user","content":[{"type":"text","text":"Use the tool @@MCP@@"}]}`
	search := `{"type":"object","properties":{"query":{"type":"string"}}}`
	tools := `"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"name":"ToolSearch","input_schema":` + search + `}]`

	last := func(c []map[string]any) map[string]any { return c[len(c)-1] }
	first := last(postMessages(t, f, `{"model":"m","max_tokens":9,"messages":[`+user+`,`+deferred+`],`+tools+`}`))
	input, _ := json.Marshal(first["input"])
	if first["type"] != "tool_use" || first["name"] != "ToolSearch" || string(input) != `{"query":"select:mcp__ev__echo"}` {
		t.Fatalf("first answer's last block = %v, want ToolSearch select:mcp__ev__echo", first)
	}
	id, _ := first["id"].(string)
	called := `{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"ToolSearch","input":` + string(input) + `}]}`
	loaded := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":[{"type":"tool_reference","tool_name":"mcp__ev__echo"}]},{"type":"text","text":"Tool loaded."}]}`
	echo := `{"name":"mcp__ev__echo","input_schema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}`
	tools = `"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"name":"ToolSearch","input_schema":` + search + `},` + echo + `]`
	second := last(postMessages(t, f, `{"model":"m","max_tokens":9,"messages":[`+user+`,`+deferred+`,`+called+`,`+loaded+`],`+tools+`}`))
	input, _ = json.Marshal(second["input"])
	if second["type"] != "tool_use" || second["name"] != "mcp__ev__echo" || string(input) != `{"message":"hi"}` {
		t.Fatalf("second answer's last block = %v, want mcp__ev__echo{message:hi}", second)
	}
	id2, _ := second["id"].(string)
	ran := `{"role":"assistant","content":[{"type":"tool_use","id":"` + id2 + `","name":"mcp__ev__echo","input":{"message":"hi"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id2 + `","content":[{"type":"text","text":"Echo: hi"}]}]}`
	third := last(postMessages(t, f, `{"model":"m","max_tokens":9,"messages":[`+user+`,`+deferred+`,`+called+`,`+loaded+`,`+ran+`],`+tools+`}`))
	if third["type"] != "text" || third["text"] != "Tool finished. Result: Echo: hi" {
		t.Errorf("third answer's last block = %v, want the echo result quoted", third)
	}

	// Named but with no ToolSearch to load them, deferred tools are not
	// called: the answer says the tool is missing.
	none := last(postMessages(t, f, `{"model":"m","max_tokens":9,"messages":[`+user+`,`+deferred+`],"tools":[{"name":"Bash","input_schema":{"type":"object"}}]}`))
	if none["type"] != "text" {
		t.Errorf("without ToolSearch the answer's last block = %v, want text", none)
	}
}
