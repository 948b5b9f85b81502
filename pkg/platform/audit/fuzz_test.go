package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
)

// FuzzRedact: any JSON document a change describes its target with comes
// out as JSON, never with a value under a secret's key left as it was.
func FuzzRedact(f *testing.F) {
	f.Add(`{"name":"a","credential":"sk-ant-0123456789","options":{"X-Api-Key":"k"},"n":1}`)
	f.Add(`[{"token":{"a":1}},"ghp_0123456789abcdef",null,true]`)
	f.Add(`"plain"`)
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		out, err := Redact(v)
		if err != nil {
			t.Fatalf("Redact(%s): %v", doc, err)
		}
		if out != nil && !json.Valid(out) {
			t.Fatalf("Redact(%s) = %s, not JSON", doc, out)
		}
		var back any
		_ = json.Unmarshal(out, &back)
		walkSecrets(t, back, false)
	})
}

// walkSecrets fails on a string under a secret's key that is not redacted.
func walkSecrets(t *testing.T, v any, secret bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			walkSecrets(t, y, secret || secretKey(k))
		}
	case []any:
		for _, y := range x {
			walkSecrets(t, y, secret)
		}
	case string:
		if secret && x != events.AuditRedacted && !strings.HasPrefix(x, "<") {
			t.Fatalf("a secret's value %q survived", x)
		}
	}
}
