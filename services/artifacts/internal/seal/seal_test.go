package seal

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	k, text, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	env, err := k.Seal("sk-secret", "account-1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(env, "sk-secret") || !strings.HasPrefix(env, "v1:"+k.Fingerprint()+":") {
		t.Errorf("envelope = %q", env)
	}
	if got, err := k.Open(env, "account-1"); err != nil || got != "sk-secret" {
		t.Errorf("Open = %q, %v", got, err)
	}
	if _, err := k.Open(env, "account-2"); !errors.Is(err, ErrMalformed) {
		t.Errorf("Open for another record = %v, want ErrMalformed", err)
	}
	other, _, _ := Generate()
	if _, err := other.Open(env, "account-1"); !errors.Is(err, ErrWrongKey) {
		t.Errorf("Open with another key = %v, want ErrWrongKey", err)
	}
	raw, _ := base64.StdEncoding.DecodeString(text)
	for _, s := range []string{text, hex.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw)} {
		k2, err := ParseKey(s)
		if err != nil || k2.Fingerprint() != k.Fingerprint() {
			t.Errorf("ParseKey(%q) = %v", s, err)
		}
	}
	if _, err := ParseKey("c2hvcnQ="); err == nil {
		t.Error("short key accepted")
	}
	if len(k.Fingerprint()) != 8 {
		t.Errorf("fingerprint %q: want 8 hex digits", k.Fingerprint())
	}
}

func TestLoadGeneratesA0600KeyFile(t *testing.T) {
	dir := t.TempDir()
	k1, err := Load("", dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", fi, err)
	}
	k2, err := Load("", dir)
	if err != nil || k2.Fingerprint() != k1.Fingerprint() {
		t.Errorf("second Load = %v, %v: want the same key", k2, err)
	}
	_, text, _ := Generate()
	k3, err := Load(text, dir)
	if err != nil || k3.Fingerprint() == k1.Fingerprint() {
		t.Errorf("env key ignored: %v", err)
	}
	if _, err := Load("nope", dir); err == nil {
		t.Error("bad env key accepted")
	}
}

// Derive is stable for one master key and label, and differs by either.
func TestDerive(t *testing.T) {
	k1, text, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ParseKey(text)
	k2, _, _ := Generate()
	a := k1.Derive("mcp oauth state")
	if len(a) != 32 || !bytes.Equal(a, again.Derive("mcp oauth state")) {
		t.Errorf("Derive = %x, want 32 bytes, the same from the same key", a)
	}
	if bytes.Equal(a, k1.Derive("other")) || bytes.Equal(a, k2.Derive("mcp oauth state")) {
		t.Error("Derive gave the same key for another label or another master key")
	}
}
