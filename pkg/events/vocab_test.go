package events

import (
	"errors"
	"testing"
)

func TestCanonicalToolNames(t *testing.T) {
	names := CanonicalToolNames()
	if len(names) != 44 {
		t.Errorf("len(CanonicalToolNames()) = %d, want 44", len(names))
	}
	seen := map[ToolName]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("%s is listed twice", n)
		}
		seen[n] = true
	}
	if names[0] != ToolBash || names[43] != ToolCronList {
		t.Errorf("CanonicalToolNames() = %s … %s, want Bash … CronList", names[0], names[len(names)-1])
	}
	names[0] = "Mutated"
	if CanonicalToolNames()[0] != ToolBash {
		t.Error("CanonicalToolNames returns the package's own slice")
	}
}

func TestToCanonicalToolName(t *testing.T) {
	tests := []struct {
		give, want  string
		wantUnknown bool
	}{
		{"Bash", "Bash", false},
		{"CronList", "CronList", false},
		{"REPL", "REPL", false},
		{"mcp__clopen__ask", "mcp__clopen__ask", false},
		{"mcp__", "mcp__", false},
		{"bash", "Unknown:bash", true},
		{"read_file", "Unknown:read_file", true},
		{"Task", "Unknown:Task", true}, // Claude's Task is mapped to Agent by the adapter, not here
		{"", "Unknown:", true},
		{"Unknown:bash", "Unknown:bash", true}, // idempotent
	}
	for _, tt := range tests {
		got := ToCanonicalToolName(tt.give)
		if got != tt.want {
			t.Errorf("ToCanonicalToolName(%q) = %q, want %q", tt.give, got, tt.want)
		}
		if IsUnknownTool(got) != tt.wantUnknown {
			t.Errorf("IsUnknownTool(%q) = %v, want %v", got, !tt.wantUnknown, tt.wantUnknown)
		}
	}
	if !IsMCPTool("mcp__a__b") || IsMCPTool("Bash") {
		t.Error("IsMCPTool misclassifies")
	}
}

func TestParseEngineType(t *testing.T) {
	for _, e := range EngineTypes() {
		got, err := ParseEngineType(string(e))
		if err != nil || got != e {
			t.Errorf("ParseEngineType(%q) = %q, %v", e, got, err)
		}
	}
	if n := len(EngineTypes()); n != 11 {
		t.Errorf("len(EngineTypes()) = %d, want 11", n)
	}
	for _, bad := range []string{"", "Claude-Code", "claude", "gpt"} {
		if _, err := ParseEngineType(bad); !errors.Is(err, ErrUnknownEngine) {
			t.Errorf("ParseEngineType(%q) err = %v, want ErrUnknownEngine", bad, err)
		}
	}
}

func TestNormalizeMCPStatus(t *testing.T) {
	tests := []struct {
		give     string
		want     MCPStatus
		wantSoft bool
	}{
		{"connected", MCPConnected, false},
		{"pending", MCPPending, true},
		{"needs-auth", MCPNeedsAuth, true},
		{"failed", MCPFailed, false},
		{"disabled", MCPDisabled, false},
		{"disconnected", MCPDisconnected, false},
		{"error", MCPDisconnected, false}, // an older build's word
		{"", MCPDisconnected, false},
		{"Connected", MCPDisconnected, false},
	}
	for _, tt := range tests {
		got := NormalizeMCPStatus(tt.give)
		if got != tt.want || got.Soft() != tt.wantSoft {
			t.Errorf("NormalizeMCPStatus(%q) = %q (soft %v), want %q (soft %v)", tt.give, got, got.Soft(), tt.want, tt.wantSoft)
		}
	}
}

func TestRunStateNames(t *testing.T) {
	terminal := map[RunStateName]bool{RunCompleted: true, RunFailed: true, RunCancelled: true, RunLost: true}
	states := RunStates()
	if len(states) != 9 {
		t.Errorf("len(RunStates()) = %d, want 9", len(states))
	}
	for _, s := range states {
		if !s.Valid() {
			t.Errorf("%s.Valid() = false", s)
		}
		if s.Terminal() != terminal[s] {
			t.Errorf("%s.Terminal() = %v, want %v", s, s.Terminal(), terminal[s])
		}
	}
	for _, s := range []RunStateName{"", "bogus", "Completed"} {
		if s.Valid() || s.Terminal() {
			t.Errorf("%q: Valid %v, Terminal %v, want false, false", s, s.Valid(), s.Terminal())
		}
	}
}

func TestErrorKinds(t *testing.T) {
	want := []ErrorKind{"auth", "rate_limited", "model_unavailable", "provider", "crashed", "timeout",
		"invalid_request", "not_installed", "needs_account", "internal", "cancelled", "interrupted", "budget_exhausted"}
	got := ErrorKinds()
	if len(got) != len(want) {
		t.Fatalf("ErrorKinds() has %d kinds, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] || !got[i].Valid() {
			t.Errorf("ErrorKinds()[%d] = %q (valid %v), want %q", i, got[i], got[i].Valid(), want[i])
		}
	}
	if ErrorKind("oops").Valid() || ErrorKind("").Valid() {
		t.Error("an unknown or empty ErrorKind is valid")
	}
}

func TestTokenUsageAdd(t *testing.T) {
	a := TokenUsage{InputTokens: 1, OutputTokens: 2, CacheCreationInputTokens: 3, CacheReadInputTokens: 4}
	b := TokenUsage{InputTokens: 10, OutputTokens: 20, CacheCreationInputTokens: 30, CacheReadInputTokens: 40}
	want := TokenUsage{InputTokens: 11, OutputTokens: 22, CacheCreationInputTokens: 33, CacheReadInputTokens: 44}
	if got := a.Add(b); got != want {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
}

func TestOutputHelpers(t *testing.T) {
	tests := []struct {
		give          Output
		wantPersisted bool
		wantSession   string
	}{
		{UserMessage{}, true, ""},
		{AssistantMessage{MessageBase: MessageBase{SessionID: "s1"}}, true, "s1"},
		{ReasoningMessage{MessageBase: MessageBase{SessionID: "s2"}}, true, "s2"},
		{CompactBoundary{MessageBase: MessageBase{SessionID: "s3"}}, true, "s3"},
		{StreamEvent{Event: StreamStart, SessionID: "s4"}, false, "s4"},
		{Result{SessionID: "s5"}, false, "s5"},
		{SystemInit{SessionID: "s6"}, false, "s6"},
		{RateLimit{SessionID: "s7"}, false, "s7"},
		{Notification{SessionID: "s8"}, false, "s8"},
		{RunState{State: RunRunning}, false, ""},
		{Unknown{Type: "x", Raw: []byte(`{"type":"x","sessionId":"s9"}`)}, false, "s9"},
		{Unknown{Type: "x", Raw: []byte(`{"type":"x","sessionId":1}`)}, false, ""},
		{&AssistantMessage{MessageBase: MessageBase{SessionID: "p"}}, true, "p"},
		{(*AssistantMessage)(nil), false, ""},
		{nil, false, ""},
	}
	for _, tt := range tests {
		if got := IsPersisted(tt.give); got != tt.wantPersisted {
			t.Errorf("IsPersisted(%T) = %v, want %v", tt.give, got, tt.wantPersisted)
		}
		if got := SessionIDOf(tt.give); got != tt.wantSession {
			t.Errorf("SessionIDOf(%T) = %q, want %q", tt.give, got, tt.wantSession)
		}
	}
	if !(Result{Subtype: ResultErrorMaxTurns}).IsError() || (Result{Subtype: ResultSuccess}).IsError() {
		t.Error("Result.IsError misclassifies")
	}
}
