package ext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRepairSchema(t *testing.T) {
	tests := []struct {
		name, give, want string
	}{
		{"valid refs stay", `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string"}}}`,
			`{"$defs":{"A":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/A"}},"type":"object"}`},
		{"definitions twin", `{"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},"$defs":{"A":{}}}`,
			`{"$defs":{"A":{}},"properties":{"a":{"$ref":"#/$defs/A"}},"type":"object"}`},
		{"$defs twin", `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"definitions":{"A":{}}}`,
			`{"definitions":{"A":{}},"properties":{"a":{"$ref":"#/definitions/A"}},"type":"object"}`},
		{"dangling", `{"type":"object","properties":{"a":{"$ref":"#/$defs/Nope","description":"d"}}}`,
			`{"properties":{"a":{"description":"d"}},"type":"object"}`},
		{"remote", `{"type":"object","properties":{"a":{"$ref":"https://x.example/s.json"}}}`, `{"properties":{"a":{}},"type":"object"}`},
		{"root and escaped pointer", `{"type":"object","properties":{"a/b":{"type":"string"},"r":{"$ref":"#"},"p":{"$ref":"#/properties/a~1b"}}}`,
			`{"properties":{"a/b":{"type":"string"},"p":{"$ref":"#/properties/a~1b"},"r":{"$ref":"#"}},"type":"object"}`},
		{"pointer to a non-schema", `{"type":"object","properties":{"a":{"$ref":"#/type"}}}`, `{"properties":{"a":{}},"type":"object"}`},
		{"array index", `{"type":"object","anyOf":[{"type":"object"}],"properties":{"a":{"$ref":"#/anyOf/0"},"b":{"$ref":"#/anyOf/7"}}}`,
			`{"anyOf":[{"type":"object"}],"properties":{"a":{"$ref":"#/anyOf/0"},"b":{}},"type":"object"}`},
		{"not a string", `{"type":"object","properties":{"a":{"$ref":7}}}`, `{"properties":{"a":{}},"type":"object"}`},
		{"no type", `{"properties":{"a":{}}}`, `{"properties":{"a":{}},"type":"object"}`},
		{"not an object schema", `{"type":"string"}`, `{"properties":{},"type":"object"}`},
		{"refs into a root made an object", `{"properties":[{"type":"string"}],"$defs":{"A":{}},"items":{"$ref":"#/$defs/A"},"x":{"$ref":"#/properties/0"}}`,
			`{"$defs":{"A":{}},"items":{"$ref":"#/$defs/A"},"properties":{},"type":"object","x":{}}`},
		{"not an object", `[1,2]`, `{"properties":{},"type":"object"}`},
		{"empty", ``, `{"properties":{},"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RepairSchema([]byte(tt.give))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("RepairSchema(%s) (-want +got):\n%s", tt.give, diff)
			}
		})
	}
	if _, err := RepairSchema([]byte(`{"type":`)); err == nil {
		t.Error("RepairSchema of broken JSON: no error")
	}
}

// danglingRef returns a $ref in v that does not resolve in root.
func danglingRef(root map[string]any, v any) string {
	switch x := v.(type) {
	case map[string]any:
		if r, ok := x["$ref"]; ok {
			if s, _ := r.(string); !resolves(root, s) {
				return s + "!"
			}
		}
		for _, c := range x {
			if d := danglingRef(root, c); d != "" {
				return d
			}
		}
	case []any:
		for _, c := range x {
			if d := danglingRef(root, c); d != "" {
				return d
			}
		}
	}
	return ""
}

// FuzzRepairSchema: any JSON comes out an object schema whose every $ref
// resolves; anything else is an error, never a panic.
func FuzzRepairSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object","properties":{"a":{"$ref":"#/definitions/A"}},"$defs":{"A":{}}}`,
		`{"$ref":"#/$ref"}`, `{"type":"object","x":[{"$ref":"#/x/0"},{"$ref":"#/x/1/$ref"}]}`, `{"$ref":"#/a~0~1"}`, `null`, `"s"`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := RepairSchema(raw)
		if err != nil {
			if len(raw) > 0 && json.Valid(raw) {
				t.Fatalf("RepairSchema(%q) refused valid JSON: %v", raw, err)
			}
			return
		}
		var root map[string]any
		if err := json.Unmarshal(out, &root); err != nil {
			t.Fatalf("RepairSchema(%q) = %q: not a JSON object", raw, out)
		}
		if root["type"] != "object" {
			t.Fatalf("RepairSchema(%q) = %s: not an object schema", raw, out)
		}
		if d := danglingRef(root, root); d != "" {
			t.Fatalf("RepairSchema(%q) = %s: $ref %q dangles", raw, out, d)
		}
	})
}

// FuzzCapOutput: whatever a server returns, the relayed output's text is
// within the cap (plus the note), and valid UTF-8 stays valid.
func FuzzCapOutput(f *testing.F) {
	f.Add("héllo wörld", "second", 5)
	f.Add(strings.Repeat("€", 50), "", 10)
	f.Fuzz(func(t *testing.T, a, b string, max int) {
		if max <= 0 || max > 1<<20 {
			return
		}
		res := capOutput(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a}, &mcp.TextContent{Text: b}}}, max)
		total := 0
		for i, c := range res.Content {
			text := c.(*mcp.TextContent).Text
			if i == len(res.Content)-1 && len(a)+len(b) > max {
				if !strings.Contains(text, "truncated") {
					t.Fatalf("no note after cutting %d bytes to %d", len(a)+len(b), max)
				}
				continue
			}
			total += len(text)
			if in := []string{a, b}[i]; utf8.ValidString(in) && !utf8.ValidString(text) {
				t.Fatalf("cut %q into invalid UTF-8 %q", in, text)
			}
		}
		if total > max {
			t.Fatalf("relayed %d bytes of text over a %d-byte cap", total, max)
		}
	})
}
