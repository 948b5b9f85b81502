package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// maxSchemaDepth bounds the recursion over a schema, which callers supply.
const maxSchemaDepth = 32

// ErrSchema is wrapped by CheckSchema for a schema generation cannot use.
var ErrSchema = errors.New("bad JSON schema")

// CheckSchema reports whether schema can drive structured generation: a
// JSON object describing an object ("type":"object"), which is what native
// structured outputs (a forced tool's input, OpenAI's json_schema) accept.
func CheckSchema(schema json.RawMessage) error {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil || s == nil {
		return fmt.Errorf("%w: want a JSON object", ErrSchema)
	}
	if t, _ := s["type"].(string); t != "object" {
		return fmt.Errorf(`%w: the top level must be "type":"object", not %v`, ErrSchema, s["type"])
	}
	return nil
}

// ValidateJSON checks doc against the basics of schema: type (or a list of
// types), enum and const, required properties, additionalProperties false,
// and the same rules in properties and items, recursively. Everything else
// a schema can say (formats, patterns, ranges) is not checked. The error
// names the path of the first mismatch.
func ValidateJSON(schema, doc json.RawMessage) error {
	var s, v any
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("%w: %v", ErrSchema, err)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("document: %w", err)
	}
	return validate(s, v, "$", 0)
}

func validate(schema, v any, path string, depth int) error {
	s, ok := schema.(map[string]any)
	if !ok || depth > maxSchemaDepth {
		return nil // true, {} or too deep: anything goes
	}
	if want, ok := s["const"]; ok && !sameJSON(want, v) {
		return fmt.Errorf("%s: want %v", path, want)
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return sameJSON(e, v) }) {
		return fmt.Errorf("%s: %v is not one of %v", path, v, enum)
	}
	if types := typesOf(s["type"]); len(types) > 0 && !slices.Contains(types, kindOf(v)) &&
		!(kindOf(v) == "integer" && slices.Contains(types, "number")) {
		return fmt.Errorf("%s: want %s, got %s", path, strings.Join(types, " or "), kindOf(v))
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range typesOf(s["required"]) {
			if _, ok := v[r]; !ok {
				return fmt.Errorf("%s: missing required property %q", path, r)
			}
		}
		for k, pv := range v {
			ps, known := props[k]
			if !known && s["additionalProperties"] == false {
				return fmt.Errorf("%s: property %q is not allowed", path, k)
			}
			if err := validate(ps, pv, path+"."+k, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := validate(s["items"], e, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// typesOf reads a string or a list of strings.
func typesOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// kindOf names a decoded value's JSON schema type.
func kindOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if f, err := v.Float64(); err == nil && f == math.Trunc(f) && !strings.ContainsAny(v.String(), ".eE") {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// sameJSON compares a schema value (numbers as float64) with a document
// value (numbers as json.Number).
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	if n, ok := b.(json.Number); ok {
		f, _ := n.Float64()
		b = f
	}
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
