package ext

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// RepairSchema returns a tool's input schema as engines accept it: every
// "$ref" resolves inside the schema (a dangling one is pointed at its
// "$defs"/"definitions" twin when that exists, else removed, and so is one
// to another document), and the root is an object schema. raw that is not
// JSON is an error; any other JSON value is repaired into a schema.
func RepairSchema(raw []byte) ([]byte, error) {
	var root any
	if len(raw) == 0 {
		root = map[string]any{}
	} else if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	return json.Marshal(repair(root))
}

// repair is RepairSchema on a decoded schema. The root is made an object
// schema first, so the references are checked against what is sent.
func repair(root any) map[string]any {
	m, ok := root.(map[string]any)
	if !ok {
		m = map[string]any{}
	}
	if t, _ := m["type"].(string); t != "object" {
		// An engine calls a tool with an object of arguments; a schema
		// of anything else describes nothing it can send.
		m["type"] = "object"
		m["properties"] = orEmpty(m["properties"])
	}
	fixRefs(m, m, 0)
	return m
}

func orEmpty(v any) any {
	if p, ok := v.(map[string]any); ok {
		return p
	}
	return map[string]any{}
}

// maxDepth bounds the walk; encoding/json refuses deeper input anyway.
const maxDepth = 10000

// fixRefs walks v and repairs each "$ref" against root.
func fixRefs(root map[string]any, v any, depth int) {
	if depth > maxDepth {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"]; ok {
			s, _ := ref.(string)
			switch {
			case resolves(root, s):
			case resolves(root, twin(s)):
				x["$ref"] = twin(s)
			default:
				delete(x, "$ref")
			}
		}
		for _, c := range x {
			fixRefs(root, c, depth+1)
		}
	case []any:
		for _, c := range x {
			fixRefs(root, c, depth+1)
		}
	}
}

// twin is ref with "#/definitions/" and "#/$defs/" swapped: schema
// generators write one and store under the other.
func twin(ref string) string {
	switch {
	case strings.HasPrefix(ref, "#/definitions/"):
		return "#/$defs/" + strings.TrimPrefix(ref, "#/definitions/")
	case strings.HasPrefix(ref, "#/$defs/"):
		return "#/definitions/" + strings.TrimPrefix(ref, "#/$defs/")
	}
	return ""
}

// resolves reports whether ref is a JSON pointer into root (RFC 6901) that
// names a schema.
func resolves(root map[string]any, ref string) bool {
	if ref == "#" {
		return true
	}
	if !strings.HasPrefix(ref, "#/") {
		return false
	}
	var cur any = root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return false
			}
			cur = c[i]
		default:
			return false
		}
	}
	switch cur.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}
