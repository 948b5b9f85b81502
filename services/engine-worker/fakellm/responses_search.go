package fakellm

import "encoding/json"

// Codex offers MCP tools through a client-executed tool_search: the tool
// list of a request has {"type":"tool_search","execution":"client"} instead
// of the MCP tools. For @@MCP@@ fakellm then calls tool_search for "echo";
// Codex answers with a tool_search_output input item whose tools (plain
// functions, or namespaces of functions) count as offered from then on, and
// the echo tool is called with its namespace.

// searchCall is the tool_search_call output item of a searchStep.
func searchCall(id string, st step) map[string]any {
	return map[string]any{"type": "tool_search_call", "id": id, "call_id": "search_" + st.id,
		"execution": "client", "status": "completed", "arguments": json.RawMessage(st.args)}
}

// searchedTools reads the tools of a tool_search_output item.
func searchedTools(raw json.RawMessage) []tool {
	var defs []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
		Tools      []struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if json.Unmarshal(raw, &defs) != nil {
		return nil
	}
	var out []tool
	for _, d := range defs {
		switch d.Type {
		case "function":
			if d.Name != "" {
				out = append(out, tool{name: d.Name, schema: d.Parameters})
			}
		case "namespace":
			for _, f := range d.Tools {
				if f.Type == "function" && f.Name != "" {
					out = append(out, tool{name: f.Name, schema: f.Parameters, namespace: d.Name})
				}
			}
		}
	}
	return out
}
