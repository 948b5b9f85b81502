package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

func TestClampEffort(t *testing.T) {
	tests := []struct {
		model, give, want string
	}{
		{"gpt-5.5", "high", "high"},
		{"gpt-5.5", "max", "medium"},      // not offered by gpt-5.5: its default
		{"gpt-6.2-sol", "ultra", "ultra"}, // newest levels where the model has them
		{"gpt-6.2-sol", "minimal", "low"}, // stale token: the model's default
		{"gpt-6-luna", "ultra", "medium"},
		{"gpt-5.5", "", "medium"},
		{"some-proxy-model", "high", "high"}, // outside the catalog: the base levels pass
		{"some-proxy-model", "xhigh", "medium"},
		{"some-proxy-model", "", "medium"},
	}
	for _, tt := range tests {
		if got := ClampEffort(tt.model, tt.give); got != tt.want {
			t.Errorf("ClampEffort(%q, %q) = %q, want %q", tt.model, tt.give, got, tt.want)
		}
	}
}

func TestUnwrapShell(t *testing.T) {
	tests := []struct{ give, want string }{
		{`/bin/bash -lc 'echo hi > f && echo ok'`, "echo hi > f && echo ok"},
		{`/bin/bash -lc 'echo '\''quoted'\'''`, "echo 'quoted'"},
		{`bash -c 'ls'`, "ls"},
		{`/bin/bash -lc ls -la`, "ls -la"}, // not one quoted word: the rest as it is
		{`git status`, "git status"},
		{`/bin/bash -lc 'unterminated`, "'unterminated"},
	}
	for _, tt := range tests {
		if got := UnwrapShell(tt.give); got != tt.want {
			t.Errorf("UnwrapShell(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestFileToolUses(t *testing.T) {
	var it Item
	if err := json.Unmarshal([]byte(`{"type":"fileChange","id":"call_1","status":"inProgress","changes":[
		{"path":"/w/new.txt","kind":{"type":"add"},"diff":"hello\n"},
		{"path":"/w/old.go","kind":{"type":"update","move_path":null},"diff":"@@ -1 +1 @@\n-a\n+b\n"},
		{"path":"/w/gone.txt","kind":{"type":"delete"},"diff":"-bye\n"},
		{"path":"/w/a.txt","kind":{"type":"update","move_path":"/w/b.txt"},"diff":""}]}`), &it); err != nil {
		t.Fatal(err)
	}
	got := fileToolUses(it)
	want := []string{
		`call_1 Write {"filePath":"/w/new.txt","content":"hello\n"}`,
		`call_1:1 Patch {"filePath":"/w/old.go","patch":"@@ -1 +1 @@\n-a\n+b\n"}`,
		`call_1:2 Patch {"delete":true,"filePath":"/w/gone.txt","patch":"-bye\n"}`,
		`call_1:3 Patch {"filePath":"/w/a.txt","movePath":"/w/b.txt","patch":""}`,
	}
	var lines []string
	for _, u := range got {
		lines = append(lines, u.id+" "+u.name+" "+string(u.input))
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("fileToolUses (-want +got):\n%s", diff)
	}
	if got := addedContent("+one\n+two\n"); got != "one\ntwo\n" {
		t.Errorf("addedContent of an all-added diff = %q", got)
	}
}

func TestConfigTOML(t *testing.T) {
	got := string(configTOML(Credential{APIKey: "sk-secret", BaseURL: `http://h:1/v1/"x"`}, 3))
	for _, want := range []string{
		`model_provider = "clopen"`, `[model_providers.clopen]`, `base_url = "http://h:1/v1/\"x\""`,
		`env_key = "CLOPEN_CODEX_API_KEY"`, `wire_api = "responses"`, "request_max_retries = 3",
		"[analytics]\nenabled = false", "plugins = false", "default_mode_request_user_input = true",
		"suppress_unstable_features_warning = true",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("config.toml lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "sk-secret") {
		t.Error("config.toml holds the API key; it belongs in the environment")
	}
	if def := string(configTOML(Credential{APIKey: "k"}, 0)); !strings.Contains(def, `base_url = "https://api.openai.com/v1"`) {
		t.Errorf("config.toml without a base URL:\n%s", def)
	}
	if got := tomlString("a\tb\\c"); got != `"a\u0009b\\c"` {
		t.Errorf("tomlString = %s", got)
	}
}

func TestEnvCredentials(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name string
		give EnvCredentials
		want Credential
		err  events.ErrorKind
	}{
		{"nothing", EnvCredentials{Getenv: env()}, Credential{}, events.KindNeedsAccount},
		{"openai key", EnvCredentials{Getenv: env("OPENAI_API_KEY", "k1")}, Credential{APIKey: "k1"}, ""},
		{"codex key first", EnvCredentials{Getenv: env("OPENAI_API_KEY", "k1", "CODEX_API_KEY", "k2")}, Credential{APIKey: "k2"}, ""},
		{"local model server", EnvCredentials{Getenv: env("CLOPEN_LLM_BASE_URL", "http://l/v1")},
			Credential{APIKey: PlaceholderKey, BaseURL: "http://l/v1"}, ""},
		{"BaseURL wins", EnvCredentials{Getenv: env("OPENAI_API_KEY", "k", "OPENAI_BASE_URL", "http://a"), BaseURL: "http://b"},
			Credential{APIKey: "k", BaseURL: "http://b"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.give.Credential(context.Background(), "t", "a")
			if engine.KindOf(err) != tt.err && (err != nil || tt.err != "") {
				t.Fatalf("Credential error = %v, want kind %q", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("Credential = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTurnErrorKinds(t *testing.T) {
	tests := []struct {
		info string
		msg  string
		want events.ErrorKind
	}{
		{`"internalServerError"`, "We're currently experiencing high demand", events.KindProvider},
		{`"unauthorized"`, "x", events.KindAuth},
		{`"usageLimitExceeded"`, "x", events.KindRateLimited},
		{`"modelNotFound"`, "x", events.KindModelUnavailable},
		{`"contextWindowExceeded"`, "x", events.KindInvalidRequest},
		{`{"httpConnectionFailed":{"httpStatusCode":503}}`, "unexpected status 503", events.KindProvider},
		{`{"responseStreamConnectionFailed":{"httpStatusCode":429}}`, "x", events.KindRateLimited},
		{`{"httpConnectionFailed":{"httpStatusCode":401}}`, "x", events.KindAuth},
		{`"other"`, "the model `x` does not exist", events.KindModelUnavailable},
		{`null`, "no rollout found for thread id", events.KindInvalidRequest},
	}
	for _, tt := range tests {
		if got := engine.KindOf(turnError(tt.msg, json.RawMessage(tt.info))); got != tt.want {
			t.Errorf("turnError(%q, %s) kind = %s, want %s", tt.msg, tt.info, got, tt.want)
		}
	}
}

func TestRateLimits(t *testing.T) {
	conv := func(params string) []events.Output {
		c := &Converter{}
		c.SetThread("th")
		c.initSent = true
		return c.Convert(Message{Method: "account/rateLimits/updated", Params: json.RawMessage(params)})
	}
	if out := conv(`{"rateLimits":{"primary":{"usedPercent":30,"windowDurationMins":300}}}`); len(out) != 0 {
		t.Errorf("a quiet window gave %v, want nothing", out)
	}
	out := conv(`{"rateLimits":{"primary":{"usedPercent":85,"windowDurationMins":300,"resetsAt":1800000000},"secondary":{"usedPercent":10}}}`)
	want := events.RateLimit{SessionID: "th", Status: events.RateLimitAllowedWarning, Utilization: 0.85, ResetsAt: 1800000000,
		RateLimitType: events.RateLimitFiveHour}
	if len(out) != 1 || out[0] != want {
		t.Errorf("a nearly used window gave %+v, want %+v", out, want)
	}
	out = conv(`{"rateLimits":{"secondary":{"usedPercent":40,"windowDurationMins":10080},"rateLimitReachedType":"primary"}}`)
	if len(out) != 1 || out[0].(events.RateLimit).Status != events.RateLimitRejected {
		t.Errorf("a reached limit gave %+v, want rejected", out)
	}
}

func TestThreadPolicy(t *testing.T) {
	servers := []engine.MCPServer{{Name: "a", URL: "http://a"}, {Name: "b", URL: "http://b"}}
	tests := []struct {
		name            string
		allowed, denied []string
		wantCfg         string
		wantServers     int
	}{
		{"no policy", nil, nil, `{}`, 2},
		{"Bash denied", nil, []string{"Bash"}, `{"features":{"shell_tool":false}}`, 2},
		{"web denied by pattern", nil, []string{"Web*"}, `{"web_search":"disabled"}`, 2},
		{"a server denied", nil, []string{"mcp__a__*"}, `{}`, 1},
		{"every MCP tool denied", nil, []string{"mcp__*"}, `{}`, 0},
		{"one MCP tool denied: Permit refuses it", nil, []string{"mcp__a__echo"}, `{}`, 2},
		{"allow list without Bash", []string{"Read", "Grep"}, nil,
			`{"features":{"shell_tool":false},"web_search":"disabled"}`, 2},
		{"allow list with Bash", []string{"Bash", "WebSearch"}, nil, `{}`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, kept := threadPolicy(events.PermissionRules{Allow: tt.allowed, Deny: tt.denied}, servers)
			if got := string(mustJSON(cfg)); got != tt.wantCfg || len(kept) != tt.wantServers {
				t.Errorf("threadPolicy = %s with %d servers, want %s with %d", got, len(kept), tt.wantCfg, tt.wantServers)
			}
		})
	}
}

func TestStartupAborted(t *testing.T) {
	aborted := &RPCError{Code: -32603, Message: "thread startup task stopped before completing"}
	tests := []struct {
		give error
		want bool
	}{
		{aborted, true},
		{fmt.Errorf("call: %w", aborted), true},
		{&RPCError{Code: -32600, Message: "invalid model"}, false},
		{errors.New("thread startup task stopped before completing"), false}, // not codex's answer
		{nil, false},
	}
	for _, tt := range tests {
		if got := startupAborted(tt.give); got != tt.want {
			t.Errorf("startupAborted(%v) = %v, want %v", tt.give, got, tt.want)
		}
	}
}
