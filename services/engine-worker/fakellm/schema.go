package fakellm

import (
	"encoding/json"
	"strings"
)

// maxSchemaDepth bounds recursion over nested schemas, which a request controls.
const maxSchemaDepth = 12

// schema is a decoded JSON schema (or Gemini's OpenAPI-flavoured variant).
// Every accessor tolerates any shape, since the schema comes from the request.
type schema map[string]any

func decodeSchema(raw json.RawMessage) schema {
	var s map[string]any
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return s
}

func asSchema(v any) schema {
	s, _ := v.(map[string]any)
	return s
}

// kind is the schema's type in lower case. A list of types gives the first one
// that is not "null"; a schema with no type but properties is an object; a
// oneOf/anyOf without a type takes the first branch's.
func (s schema) kind() string {
	switch t := s["type"].(type) {
	case string:
		return strings.ToLower(t)
	case []any:
		for _, e := range t {
			if n, ok := e.(string); ok && !strings.EqualFold(n, "null") {
				return strings.ToLower(n)
			}
		}
	}
	if s.props() != nil {
		return "object"
	}
	if b := s.branch(); b != nil {
		return b.kind()
	}
	return ""
}

// branch is the first alternative of a oneOf/anyOf, if any.
func (s schema) branch() schema {
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			return asSchema(alts[0])
		}
	}
	return nil
}

func (s schema) props() map[string]any {
	p, _ := s["properties"].(map[string]any)
	return p
}

func (s schema) prop(name string) schema {
	return asSchema(s.props()[name])
}

func (s schema) has(name string) bool {
	_, ok := s.props()[name]
	return ok
}

func (s schema) items() schema {
	if it := asSchema(s["items"]); it != nil {
		return it
	}
	if b := s.branch(); b != nil {
		return b.items()
	}
	return nil
}

func (s schema) required() []string {
	var names []string
	list, _ := s["required"].([]any)
	for _, e := range list {
		if n, ok := e.(string); ok {
			names = append(names, n)
		}
	}
	return names
}

// firstEnum is the schema's first enum value, if it has one.
func (s schema) firstEnum() (any, bool) {
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0], true
	}
	return nil, false
}

// example builds a value that fits s, for JSON-mode answers: strings are
// "fakellm", numbers 1, booleans true, arrays hold one item, objects have every
// property, and an enum gives its first value.
func (s schema) example(depth int) any {
	if v, ok := s.firstEnum(); ok {
		return v
	}
	if depth > maxSchemaDepth {
		return nil
	}
	switch s.kind() {
	case "object", "":
		obj := map[string]any{}
		for name, p := range s.props() {
			obj[name] = asSchema(p).example(depth + 1)
		}
		return obj
	case "array":
		return []any{s.items().example(depth + 1)}
	case "integer", "number":
		return 1
	case "boolean":
		return true
	case "null":
		return nil
	default:
		return "fakellm"
	}
}

// filler is a harmless value for a required tool argument the answer does not
// set itself: the schema's default or first enum value, false, the minimum (or
// 1), an empty list, or an object of its own required fields.
func (s schema) filler(depth int) any {
	if v, ok := s["default"]; ok {
		return v
	}
	if v, ok := s.firstEnum(); ok {
		return v
	}
	if depth > maxSchemaDepth {
		return nil
	}
	switch s.kind() {
	case "object":
		obj := map[string]any{}
		s.fillRequired(obj, depth+1)
		return obj
	case "array":
		return []any{}
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		return 1
	case "boolean":
		return false
	case "null":
		return nil
	default:
		return "fakellm"
	}
}

// fillRequired sets every required property of s that args lacks.
func (s schema) fillRequired(args map[string]any, depth int) {
	for _, name := range s.required() {
		if _, ok := args[name]; !ok {
			args[name] = s.prop(name).filler(depth)
		}
	}
}
