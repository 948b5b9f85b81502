package engines

import (
	"context"
	"errors"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// TestCodexAndPiRows: both rows pin one exact package each, and need an
// account unless a model server's address is configured.
func TestCodexAndPiRows(t *testing.T) {
	tests := []struct {
		typ     events.EngineType
		pkg     string
		version string
		bin     string
		key     string // an environment variable that is an account
	}{
		{events.EngineCodex, "@openai/codex", CodexVersion + "-linux-x64",
			"node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/bin/codex", "OPENAI_API_KEY"},
		{events.EnginePi, "@mariozechner/pi-coding-agent", PiVersion, "node_modules/.bin/pi", "ANTHROPIC_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			s, ok := Lookup(tt.typ)
			if !ok {
				t.Fatalf("no row for %s", tt.typ)
			}
			if len(s.Packages) != 1 || s.Packages[0].Name != tt.pkg || s.Packages[0].Version != tt.version || s.Bin != tt.bin {
				t.Errorf("row = %+v, want %s@%s with bin %s", s, tt.pkg, tt.version, tt.bin)
			}
			var ee *engine.Error
			if err := s.Account(context.Background(), Setup{}); !errors.As(err, &ee) || ee.Kind != events.KindNeedsAccount {
				t.Errorf("Account without credentials = %v, want needs_account", err)
			}
			if err := s.Account(context.Background(), Setup{LLMBaseURL: "http://127.0.0.1:1"}); err != nil {
				t.Errorf("Account with a base URL = %v, want nil", err)
			}
			env := map[string]string{tt.key: "k"}
			if err := s.Account(context.Background(), Setup{Getenv: func(k string) string { return env[k] }}); err != nil {
				t.Errorf("Account with %s = %v, want nil", tt.key, err)
			}
			f := s.Factory("/bin/true", Setup{DataDir: t.TempDir()})
			e, err := f(context.Background(), engine.Key{Engine: tt.typ, Tenant: "t", Account: "a"})
			if err != nil || e.Type() != tt.typ {
				t.Errorf("factory = %v, %v; want a %s engine", e, err, tt.typ)
			}
		})
	}
}
