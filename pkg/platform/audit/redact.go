package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"clopen.dev/pkg/events"
)

// MaxString is the longest string an entry keeps as it is; a longer one (a
// skill's document, say) is recorded as its length and SHA-256, enough to
// tell whether two versions differ without copying either.
const MaxString = 4096

// Redact encodes v as JSON with its secrets replaced by
// events.AuditRedacted: every string, object or array under a key that
// names a secret (a credential, key, token, secret, password or
// authorization, in any case and spelling: apiKey, x-api-key,
// client_secret, accessToken …), and every string that looks like a
// provider key or token whatever its key (sk-…, ghp_…, github_pat_…,
// xoxb-…, AKIA…, a Bearer header). Numbers and booleans stay (hasCredential,
// inputTokens). Strings longer than MaxString are digested. nil is null.
func Redact(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	return json.Marshal(scrub(doc, false))
}

// scrub returns doc with its secrets replaced; secret says that doc sits
// under a key naming a secret.
func scrub(doc any, secret bool) any {
	switch v := doc.(type) {
	case map[string]any:
		if secret {
			return events.AuditRedacted
		}
		for k, x := range v {
			v[k] = scrub(x, secretKey(k))
		}
		return v
	case []any:
		if secret {
			return events.AuditRedacted
		}
		for i, x := range v {
			v[i] = scrub(x, false)
		}
		return v
	case string:
		if secret || secretValue(v) {
			return events.AuditRedacted
		}
		if len(v) > MaxString {
			sum := sha256.Sum256([]byte(v))
			return fmt.Sprintf("<%d bytes, sha256 %s>", len(v), hex.EncodeToString(sum[:]))
		}
		return v
	}
	return doc // numbers, booleans, null
}

// secretWords are what a key naming a secret holds, once lower-cased and
// stripped of everything but letters and digits.
var secretWords = []string{"secret", "password", "passwd", "token", "credential", "authorization", "privatekey", "cookie", "sealed"}

// secretKey reports whether a JSON key names a secret.
func secretKey(k string) bool {
	var b strings.Builder
	for _, r := range strings.ToLower(k) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	n := b.String()
	if n == "key" || strings.HasSuffix(n, "apikey") || strings.HasSuffix(n, "secretkey") || strings.HasSuffix(n, "accesskey") {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// secretPrefixes begin the keys and tokens of the providers and forges
// Clopen talks to.
var secretPrefixes = []string{"sk-", "sk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-",
	"xoxa-", "AKIA", "ASIA", "AIza", "ya29.", "bearer ", "Bearer ", "basic ", "Basic "}

// secretValue reports whether a string looks like a key or token by itself.
func secretValue(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range secretPrefixes {
		if strings.HasPrefix(s, p) && len(s) >= len(p)+8 {
			return true
		}
	}
	return false
}
