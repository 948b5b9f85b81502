package engines

import (
	"context"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
)

func TestACPRows(t *testing.T) {
	tests := []struct {
		give    events.EngineType
		version string
	}{
		{events.EngineGemini, GeminiVersion},
		{events.EngineQwen, QwenVersion},
		{events.EngineCopilot, CopilotVersion},
		{events.EngineOpenCode, OpenCodeVersion},
		{events.EngineCline, ClineVersion},
	}
	for _, tt := range tests {
		s, ok := Lookup(tt.give)
		if !ok || s.Version != tt.version || len(s.Packages) != 1 || s.Packages[0].Version != tt.version || s.External != nil {
			t.Errorf("row %s = %+v, want one package pinned at %s", tt.give, s, tt.version)
		}
		// Without credentials an agent needs an account; a base URL is enough.
		if err := s.Account(context.Background(), Setup{}); err == nil {
			t.Errorf("%s Account without credentials = nil, want needs_account", tt.give)
		}
		if err := s.Account(context.Background(), Setup{LLMBaseURL: "http://127.0.0.1:1"}); err != nil {
			t.Errorf("%s Account with a base URL = %v, want nil", tt.give, err)
		}
	}
}

// TestCursorIsUntested: Cursor's agent cannot be installed by Clopen;
// doctor says so and calls the profile untested, and it is ready only
// when its binary is there.
func TestCursorIsUntested(t *testing.T) {
	s, _ := Lookup(events.EngineCursor)
	env := map[string]string{"PATH": ""}
	setup := Setup{EnginesDir: t.TempDir(), Getenv: func(k string) string { return env[k] }}
	st := s.Check(context.Background(), setup)
	if st.State != NotInstalled || !strings.Contains(st.Message, "untested") || !strings.Contains(st.Message, "not on npm") {
		t.Errorf("Check without the binary = %+v, want not-installed, saying untested", st)
	}
	if _, err := s.Install(context.Background(), setup.Root(), t.TempDir(), &strings.Builder{}); err == nil {
		t.Error("Install of cursor succeeded, want a refusal")
	}
	env["CLOPEN_CURSOR_BIN"], env["CURSOR_API_KEY"] = "/bin/true", "k"
	st = s.Check(context.Background(), setup)
	if st.State != Ready || !strings.Contains(st.Message, "untested") {
		t.Errorf("Check with a binary = %+v, want ready, still saying untested", st)
	}
}

// TestCustomACPAgent: the acp engine is offered once its configured
// command resolves.
func TestCustomACPAgent(t *testing.T) {
	s, _ := Lookup(events.EngineACP)
	env := map[string]string{}
	setup := Setup{EnginesDir: t.TempDir(), Getenv: func(k string) string { return env[k] }}
	if st := s.Check(context.Background(), setup); st.State != NotInstalled || !strings.Contains(st.Message, "CLOPEN_ACP_COMMAND") {
		t.Errorf("Check unconfigured = %+v, want not-installed naming CLOPEN_ACP_COMMAND", st)
	}
	env["CLOPEN_ACP_COMMAND"] = "no-such-agent-anywhere --acp"
	if st := s.Check(context.Background(), setup); st.State != NotInstalled || !strings.Contains(st.Message, "does not resolve") {
		t.Errorf("Check with a missing command = %+v, want not-installed", st)
	}
	env["CLOPEN_ACP_CONFIG"] = `{"command":"/bin/cat","args":["-u"]}`
	if st := s.Check(context.Background(), setup); st.State != Ready {
		t.Errorf("Check with /bin/cat = %+v, want ready", st)
	}
	f, _ := Available(context.Background(), setup)
	if f[events.EngineACP] == nil {
		t.Error("Available does not offer the configured ACP agent")
	}
}
