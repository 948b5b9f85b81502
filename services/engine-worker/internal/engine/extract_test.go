package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestExtractJSON(t *testing.T) {
	tests := []struct {
		name, give, want string
		wantErr          error
	}{
		{"bare object", `{"message": "fix: x"}`, `{"message":"fix: x"}`, nil},
		{"bare array", ` [1, 2] `, `[1,2]`, nil},
		{"json fence with prose", "Here you go:\n```json\n{\"name\": \"feat/x\"}\n```\nAnything else?", `{"name":"feat/x"}`, nil},
		{"plain fence", "```\n{\"a\":1}\n```", `{"a":1}`, nil},
		{"second fence when the first is not JSON", "```json\nnot json\n```\n```json\n{\"a\":2}\n```", `{"a":2}`, nil},
		{"prose around an object", `Sure! {"a": {"b": [1, "}"]}} Hope that helps.`, `{"a":{"b":[1,"}"]}}`, nil},
		{"placeholder braces before the object", `Use the {name} form: {"name": "x"}`, `{"name":"x"}`, nil},
		{"apostrophe in the prose", `It's done: {"a": "it's"}`, `{"a":"it's"}`, nil},
		{"escaped quotes and brackets in strings", `{"a": "say \"}\" and ]"}`, `{"a":"say \"}\" and ]"}`, nil},
		{"first balanced of several", `x {"a": 1} y {"b": {"c": 2}} z`, `{"a":1}`, nil},
		{"first to last brace inside an unclosed array", `[ {"a": 1} and then nothing`, `{"a":1}`, nil},
		{"literal newline in a string", "{\"message\": \"line one\nline two\ttab\"}", `{"message":"line one\nline two\ttab"}`, nil},
		{"other control character", "{\"a\": \"bell\x07\"}", `{"a":"bell\u0007"}`, nil},
		{"array in a fence with a language tag in capitals", "```JSON\n[{\"a\":1}]\n```", `[{"a":1}]`, nil},
		{"truncated object", `{"message": "a long message that stops in the mid`, "", ErrTruncatedJSON},
		{"truncated in a fence", "```json\n{\"a\": [1, 2,\n", "", ErrTruncatedJSON},
		{"no JSON at all", "I cannot help with that.", "", ErrNoJSON},
		{"empty", "", "", ErrNoJSON},
		{"a lone scalar is not a document", `"just a string"`, "", ErrNoJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExtractJSON(tt.give)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("ExtractJSON(%q) = %s, %v; want %v", tt.give, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("ExtractJSON(%q) = %s, %v; want %s", tt.give, got, err, tt.want)
			}
		})
	}
}

// TestExtractJSONErrorShowsBothEnds: a long truncated answer's error shows
// how it began and where it stopped.
func TestExtractJSONErrorShowsBothEnds(t *testing.T) {
	text := `{"body": "` + strings.Repeat("word ", 200) + `the end`
	_, err := ExtractJSON(text)
	if err == nil || !strings.Contains(err.Error(), `{\"body\"`) || !strings.Contains(err.Error(), "the end") ||
		!strings.Contains(err.Error(), "bytes)") {
		t.Errorf("err = %v, want both ends and the size", err)
	}
}

// FuzzExtractJSON: never panics; what it returns is a valid, compact JSON
// object or array; an error is always ErrNoJSON or ErrTruncatedJSON; and an
// answer that is a compact document is returned as it is. The seed corpus is
// testdata/fuzz/FuzzExtractJSON.
func FuzzExtractJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) {
		doc, err := ExtractJSON(text)
		if err != nil {
			if !errors.Is(err, ErrNoJSON) && !errors.Is(err, ErrTruncatedJSON) {
				t.Fatalf("ExtractJSON(%q) err = %v, want ErrNoJSON or ErrTruncatedJSON", text, err)
			}
			if json.Valid([]byte(text)) && (strings.HasPrefix(text, "{") || strings.HasPrefix(text, "[")) {
				t.Fatalf("ExtractJSON(%q) refused a JSON document: %v", text, err)
			}
			return
		}
		if !json.Valid(doc) || (doc[0] != '{' && doc[0] != '[') {
			t.Fatalf("ExtractJSON(%q) = %q, not a JSON object or array", text, doc)
		}
		if again, err := ExtractJSON(string(doc)); err != nil || string(again) != string(doc) {
			t.Fatalf("ExtractJSON of its own result %q = %q, %v", doc, again, err)
		}
	})
}
