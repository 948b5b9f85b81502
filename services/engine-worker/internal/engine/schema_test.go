package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckSchema(t *testing.T) {
	for _, give := range []string{`{"type":"object"}`, `{"type":"object","properties":{"a":{"type":"string"}}}`} {
		if err := CheckSchema(json.RawMessage(give)); err != nil {
			t.Errorf("CheckSchema(%s) = %v", give, err)
		}
	}
	for _, give := range []string{``, `null`, `[]`, `"object"`, `{}`, `{"type":"array"}`, `{"type":["object"]}`, `{"type":`} {
		if err := CheckSchema(json.RawMessage(give)); !errors.Is(err, ErrSchema) {
			t.Errorf("CheckSchema(%s) = %v, want ErrSchema", give, err)
		}
	}
}

func TestValidateJSON(t *testing.T) {
	const schema = `{"type":"object","additionalProperties":false,"required":["name","tags","level"],
		"properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},
		"level":{"enum":["low","high"]},"count":{"type":"integer"},"ratio":{"type":"number"},
		"note":{"type":["string","null"]},"kind":{"const":"draft"},"nested":{"type":"object","required":["x"]}}}`
	tests := []struct {
		give, wantErr string // wantErr: a fragment of the error, "" for valid
	}{
		{`{"name":"a","tags":[],"level":"low"}`, ""},
		{`{"name":"a","tags":["x"],"level":"high","count":3,"ratio":0.5,"note":null,"kind":"draft","nested":{"x":1}}`, ""},
		{`{"name":"a","tags":[],"level":"low","ratio":2}`, ""}, // an integer is a number
		{`{"tags":[],"level":"low"}`, `$: missing required property "name"`},
		{`{"name":1,"tags":[],"level":"low"}`, "$.name: want string, got integer"},
		{`{"name":"a","tags":[1],"level":"low"}`, "$.tags[0]: want string"},
		{`{"name":"a","tags":[],"level":"medium"}`, "$.level: medium is not one of"},
		{`{"name":"a","tags":[],"level":"low","count":1.5}`, "$.count: want integer, got number"},
		{`{"name":"a","tags":[],"level":"low","extra":true}`, `property "extra" is not allowed`},
		{`{"name":"a","tags":[],"level":"low","kind":"final"}`, "$.kind: want draft"},
		{`{"name":"a","tags":[],"level":"low","nested":{}}`, `$.nested: missing required property "x"`},
		{`[]`, "$: want object, got array"},
		{`{"name":`, "document:"},
	}
	for _, tt := range tests {
		err := ValidateJSON(json.RawMessage(schema), json.RawMessage(tt.give))
		if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("ValidateJSON(%s) = %v, want %q", tt.give, err, tt.wantErr)
		}
	}
}

// FuzzValidateJSON: schemas and documents come from callers and models;
// checking one never panics and fails only with an error, and a schema
// CheckSchema accepts validates a document built to match its type.
func FuzzValidateJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, schema, doc []byte) {
		_ = ValidateJSON(schema, doc)
		if CheckSchema(schema) == nil {
			if err := ValidateJSON(schema, json.RawMessage(`{}`)); err != nil && !strings.Contains(err.Error(), "$") {
				t.Fatalf("ValidateJSON(%s, {}) = %v: an object's failure must name its path", schema, err)
			}
		}
	})
}
