package claude_test

import (
	"context"
	"errors"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/claude"
)

func TestCanonicalInput(t *testing.T) {
	tests := []struct {
		tool, give, want string
	}{
		{"Read", `{"file_path":"/a","offset":2}`, `{"filePath":"/a","offset":2}`},
		{"Edit", `{"file_path":"/a","old_string":"x","new_string":"y","replace_all":true}`, `{"filePath":"/a","newString":"y","oldString":"x","replaceAll":true}`},
		{"Grep", `{"pattern":"p","-A":1,"-B":2,"-C":3,"-i":true,"-n":true,"output_mode":"content","head_limit":5}`,
			`{"after":1,"before":2,"caseInsensitive":true,"context":3,"headLimit":5,"lineNumbers":true,"outputMode":"content","pattern":"p"}`},
		{"Agent", `{"prompt":"p","description":"d"}`, `{"description":"d","prompt":"p","subagentType":"general-purpose"}`},
		{"Agent", `{"prompt":"p","subagent_type":"explore"}`, `{"prompt":"p","subagentType":"explore"}`},
		{"Bash", `{"command":"ls","run_in_background":true}`, `{"command":"ls","runInBackground":true}`},
		{"AskUserQuestion", `{"questions":[{"question":"q","multiSelect":false}]}`, `{"questions":[{"question":"q","multiSelect":false}]}`},
		{"Bash", `null`, `{}`},
		{"Bash", `[1]`, `{}`},
	}
	for _, tt := range tests {
		if got := string(claude.CanonicalInput(tt.tool, []byte(tt.give))); got != tt.want {
			t.Errorf("CanonicalInput(%s, %s) = %s, want %s", tt.tool, tt.give, got, tt.want)
		}
	}
}

func TestToolName(t *testing.T) {
	for give, want := range map[string]string{"Task": "Agent", "Bash": "Bash", "mcp__s__t": "mcp__s__t", "ReportFindings": "Unknown:ReportFindings"} {
		if got := claude.ToolName(give); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", give, got, want)
		}
	}
}

func TestClampLevel(t *testing.T) {
	tests := []struct{ model, give, want string }{
		{"claude-opus-5-5", "high", "high"},
		{"claude-opus-5-5", "max", "max"},
		{"claude-opus-5-5", "off", "auto"}, // its thinking cannot be turned off
		{"claude-opus-5-5", "", "auto"},
		{"claude-opus-5-5", "ultra", "auto"},
		{"claude-sonnet-4-5", "off", "off"},
		{"claude-sonnet-4-5", "high", "auto"}, // no effort on budgeted thinking
		{"some-future-model", "xhigh", "xhigh"},
		{"some-future-model", "bogus", "auto"},
	}
	for _, tt := range tests {
		if got := claude.ClampLevel(tt.model, tt.give); got != tt.want {
			t.Errorf("ClampLevel(%q, %q) = %q, want %q", tt.model, tt.give, got, tt.want)
		}
	}
	if _, ok := claude.LookupModel(claude.DefaultModel); !ok {
		t.Errorf("the default model %s is not in the catalog", claude.DefaultModel)
	}
}

func TestEnvCredentials(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name     string
		creds    claude.EnvCredentials
		want     claude.Credential
		wantKind events.ErrorKind
	}{
		{"nothing", claude.EnvCredentials{Getenv: env()}, claude.Credential{}, events.KindNeedsAccount},
		{"api key", claude.EnvCredentials{Getenv: env("ANTHROPIC_API_KEY", "k")}, claude.Credential{APIKey: "k"}, ""},
		{"oauth and base", claude.EnvCredentials{Getenv: env("CLAUDE_CODE_OAUTH_TOKEN", "o", "ANTHROPIC_BASE_URL", "http://gw")},
			claude.Credential{OAuthToken: "o", BaseURL: "http://gw"}, ""},
		{"global override wins and needs no key", claude.EnvCredentials{Getenv: env("ANTHROPIC_BASE_URL", "http://gw", "CLOPEN_LLM_BASE_URL", "http://mock")},
			claude.Credential{APIKey: claude.PlaceholderKey, BaseURL: "http://mock"}, ""},
		{"explicit base URL wins over the environment", claude.EnvCredentials{Getenv: env("ANTHROPIC_API_KEY", "k", "CLOPEN_LLM_BASE_URL", "http://env"), BaseURL: "http://flag"},
			claude.Credential{APIKey: "k", BaseURL: "http://flag"}, ""},
	}
	for _, tt := range tests {
		got, err := tt.creds.Credential(context.Background(), "t", "a")
		if got != tt.want || engine.KindOf(err) != tt.wantKind && (err != nil || tt.wantKind != "") {
			t.Errorf("%s: Credential = %+v, %v; want %+v, kind %q", tt.name, got, err, tt.want, tt.wantKind)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	tests := []struct {
		line string
		want events.ErrorKind
	}{
		{`{"type":"result","subtype":"success","is_error":true,"api_error_status":401,"result":"x"}`, events.KindAuth},
		{`{"type":"result","subtype":"success","is_error":true,"api_error_status":403,"result":"x"}`, events.KindAuth},
		{`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"x"}`, events.KindRateLimited},
		{`{"type":"result","subtype":"success","is_error":true,"api_error_status":404,"result":"x"}`, events.KindModelUnavailable},
		{`{"type":"result","subtype":"success","is_error":true,"api_error_status":500,"result":"x"}`, events.KindProvider},
		{`{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login"}`, events.KindAuth},
		{`{"type":"result","subtype":"success","is_error":true,"result":"The model claude-x is not available"}`, events.KindModelUnavailable},
		{`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["something broke"]}`, events.KindProvider},
	}
	for _, tt := range tests {
		l, err := claude.DecodeLine([]byte(tt.line))
		if err != nil {
			t.Fatal(err)
		}
		if got := engine.KindOf(claude.ResultError(l)); got != tt.want {
			t.Errorf("ResultError(%s) kind = %s, want %s", tt.line, got, tt.want)
		}
	}
	ok, _ := claude.DecodeLine([]byte(`{"type":"result","subtype":"success","is_error":false}`))
	aborted, _ := claude.DecodeLine([]byte(`{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_tools"}`))
	for _, l := range []claude.Line{ok, aborted} {
		if err := claude.ResultError(l); err != nil {
			t.Errorf("ResultError(%+v) = %v, want nil (success, or an interrupt)", l, err)
		}
	}
	var ee *engine.Error
	if err := claude.ResultError(ok); errors.As(err, &ee) {
		t.Errorf("a success is an error: %v", err)
	}
}
