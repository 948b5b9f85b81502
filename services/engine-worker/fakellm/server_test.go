package fakellm_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"clopen.dev/services/engine-worker/fakellm"
)

// post sends body to path and returns the status and the whole response body.
func post(t *testing.T, f *fixture, path, body string) (int, string) {
	t.Helper()
	resp, err := f.hc.Post(f.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// sseEvent is one server-sent event: its event: name (may be empty) and data.
type sseEvent struct{ name, data string }

func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, ":"): // comment
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

// streamRequests are minimal streaming requests per format; %s is the prompt.
var streamRequests = []struct {
	format, path, body string
	tools              string // the same request, offering a shell tool
}{
	{"anthropic", "/v1/messages?beta=true",
		`{"model":"m","stream":true,"messages":[{"role":"user","content":%q}]%s}`,
		`,"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]`},
	{"chat", "/v1/chat/completions",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":%q}]%s}`,
		`,"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]`},
	{"responses", "/v1/responses",
		`{"model":"m","stream":true,"input":[{"role":"user","content":%q}]%s}`,
		`,"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]`},
	{"gemini", "/v1beta/models/m:streamGenerateContent?alt=sse",
		`{"contents":[{"role":"user","parts":[{"text":%q}]}]%s}`,
		`,"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"}}}}]}]`},
}

// terminal reports whether ev is the format's last event.
func terminal(format string, ev sseEvent) bool {
	switch format {
	case "anthropic":
		return ev.name == "message_stop"
	case "chat":
		return ev.data == "[DONE]"
	case "responses":
		return ev.name == "response.completed"
	default:
		return strings.Contains(ev.data, `"finishReason":"STOP"`)
	}
}

func TestStreamsEndWithTerminalEvent(t *testing.T) {
	prompts := []string{"hi", "@@THINK@@ @@TOOL@@", "@@SLOW@@", "@@ASK@@", "@@TEXT:50@@"}
	for _, rq := range streamRequests {
		for _, prompt := range prompts {
			t.Run(rq.format+" "+prompt, func(t *testing.T) {
				f := newFixture(t, fakellm.Config{SlowFor: 20 * time.Millisecond, KeepAlive: 5 * time.Millisecond})
				status, body := post(t, f, rq.path, strings.Replace(strings.Replace(rq.body, "%q", jsonString(prompt), 1), "%s", rq.tools, 1))
				if status != http.StatusOK {
					t.Fatalf("status %d: %s", status, body)
				}
				events := parseSSE(t, body)
				if len(events) == 0 || !terminal(rq.format, events[len(events)-1]) {
					t.Fatalf("last event of %d is %+v, want the %s terminal event", len(events), events[len(events)-1], rq.format)
				}
				for i, ev := range events[:len(events)-1] {
					if terminal(rq.format, ev) {
						t.Errorf("terminal event at %d of %d", i, len(events))
					}
				}
				checkEventNames(t, rq.format, events)
			})
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// checkEventNames checks what each format requires of event: lines: Anthropic
// and Responses name every event after its data's type, and every Anthropic
// content block that starts also stops.
func checkEventNames(t *testing.T, format string, events []sseEvent) {
	t.Helper()
	starts, stops := 0, 0
	for _, ev := range events {
		if format == "chat" || format == "gemini" {
			if ev.name != "" {
				t.Errorf("%s event has a name %q", format, ev.name)
			}
			continue
		}
		var data struct{ Type string }
		if err := json.Unmarshal([]byte(ev.data), &data); err != nil || data.Type != ev.name {
			t.Errorf("event %q carries type %q (err %v)", ev.name, data.Type, err)
		}
		starts += strings.Count(ev.name, "content_block_start")
		stops += strings.Count(ev.name, "content_block_stop")
	}
	if starts != stops {
		t.Errorf("%d content blocks started, %d stopped", starts, stops)
	}
}

func TestErrorShapes(t *testing.T) {
	tests := []struct {
		name, path, body string
		wantStatus       int
		want             string // a JSON object the body must contain, as compact JSON of the error member
	}{
		{"anthropic bad json", "/v1/messages", `{`, 400, `{"message":"fakellm: parse anthropic request: unexpected end of JSON input","type":"invalid_request_error"}`},
		{"chat bad json", "/v1/chat/completions", `{"messages":{}}`, 400, ""},
		{"responses bad input", "/v1/responses", `{"input":1}`, 400, ""},
		{"gemini bad json", "/v1beta/models/m:generateContent", `[`, 400, ""},
		{"gemini unknown method", "/v1beta/models/m:embedContent", `{}`, 404, ""},
		{"unknown path", "/v2/whatever", `{}`, 404, ""},
		{"gemini forced", "/v1beta/models/m:generateContent", `{"contents":[{"parts":[{"text":"@@ERROR@@"}]}]}`, 500,
			`{"code":500,"message":"fakellm: @@ERROR@@ forced a server error","status":"INTERNAL"}`},
		{"chat forced", "/v1/chat/completions", `{"messages":[{"role":"user","content":"@@ERROR@@"}]}`, 500,
			`{"code":"internal_error","message":"fakellm: @@ERROR@@ forced a server error","param":null,"type":"server_error"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			status, body := post(t, f, tt.path, tt.body)
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d", status, tt.wantStatus)
			}
			var got struct {
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Error) == 0 {
				t.Fatalf("body %s has no error member (err %v)", body, err)
			}
			if !strings.Contains(string(got.Error), `"message":"fakellm: `) {
				t.Errorf("error %s has no fakellm message", got.Error)
			}
			if tt.want != "" {
				var compact bytes.Buffer
				_ = json.Compact(&compact, got.Error)
				if diff := cmp.Diff(tt.want, compact.String()); diff != "" {
					t.Errorf("error member (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestModelLists(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	ctx := testContext(t)

	oa := newOpenAI(f)
	page, err := oa.Models.List(ctx)
	if err != nil || len(page.Data) == 0 || page.Data[0].ID != "fakellm" {
		t.Errorf("openai Models.List = %+v, %v; want fakellm first", page, err)
	}
	an := newAnthropic(f)
	apage, err := an.Models.List(ctx, anthropic.ModelListParams{})
	if err != nil || len(apage.Data) == 0 || apage.Data[0].DisplayName != "fakellm" {
		t.Errorf("anthropic Models.List = %+v, %v; want fakellm first", apage, err)
	}
	gpage, err := newGenai(t, f).Models.List(ctx, &genai.ListModelsConfig{})
	if err != nil || len(gpage.Items) == 0 || gpage.Items[0].Name != "models/fakellm" {
		t.Errorf("genai Models.List = %+v, %v; want models/fakellm first", gpage, err)
	}
}

func TestCountTokensAndHealth(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	tests := []struct{ path, body, want string }{
		{"/v1/messages/count_tokens", `{"messages":[{"role":"user","content":"hello there"}]}`, `"input_tokens"`},
		{"/v1beta/models/m:countTokens", `{"contents":[{"parts":[{"text":"hello"}]}]}`, `"totalTokens"`},
	}
	for _, tt := range tests {
		if status, body := post(t, f, tt.path, tt.body); status != 200 || !strings.Contains(body, tt.want) {
			t.Errorf("POST %s = %d %s, want 200 with %s", tt.path, status, body, tt.want)
		}
	}
	resp, err := f.hc.Get(f.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /health = %d, want 200", resp.StatusCode)
	}
}

func TestRequestLog(t *testing.T) {
	var buf bytes.Buffer
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	f := newFixture(t, fakellm.Config{Log: &buf, LogPath: path})
	post(t, f, "/v1/chat/completions", `{"model":"gpt-x","messages":[{"role":"user","content":"@@THINK@@ @@TOOL@@"},{"role":"tool","content":"ok"}],
		"tools":[{"type":"function","function":{"name":"bash"}},{"type":"function","function":{"name":"read"}}]}`)
	post(t, f, "/v1beta/models/gem:streamGenerateContent?alt=sse", `{"contents":[{"parts":[{"text":"hi"}]}]}`)
	post(t, f, "/v1/messages", `{"model":"c","system":[{"type":"text","text":"You are terse."}],"messages":[{"role":"user","content":"remember APPLE"},
		{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"<system-reminder>Use Go.</system-reminder>"},
		{"type":"text","text":"what was it?"}]}]}`)

	want := []fakellm.Request{
		{Method: "POST", Path: "/v1/chat/completions", Format: "chat", Model: "gpt-x", Marker: "@@THINK@@ @@TOOL@@", ToolResult: true,
			Tools: []string{"bash", "read"}, UserTurns: []string{"@@THINK@@ @@TOOL@@"}},
		{Method: "POST", Path: "/v1beta/models/gem:streamGenerateContent", Format: "gemini", Model: "gem", Stream: true, Tools: []string{},
			UserTurns: []string{"hi"}},
		{Method: "POST", Path: "/v1/messages", Format: "anthropic", Model: "c", Tools: []string{},
			UserTurns: []string{"remember APPLE", "what was it?"}, Context: []string{"You are terse.", "<system-reminder>Use Go.</system-reminder>"}},
	}
	ignoreTime := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Time" }, cmp.Ignore())
	if diff := cmp.Diff(want, f.srv.Requests(), ignoreTime); diff != "" {
		t.Errorf("Requests() (-want +got):\n%s", diff)
	}
	fileLog, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, log := range map[string]string{"Log": buf.String(), "LogPath": string(fileLog)} {
		var got []fakellm.Request
		for line := range strings.Lines(log) {
			var r fakellm.Request
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%s line %q: %v", name, line, err)
			}
			if r.Time.IsZero() {
				t.Errorf("%s line %q has no time", name, line)
			}
			got = append(got, r)
		}
		if diff := cmp.Diff(want, got, ignoreTime); diff != "" {
			t.Errorf("%s lines (-want +got):\n%s", name, diff)
		}
	}

	// Which credential a call carried is logged as an id, never the key.
	for header, value := range map[string]string{"x-api-key": "sk-ant-1", "Authorization": "Bearer sk-oai-1", "x-goog-api-key": "AIza-1"} {
		req, _ := http.NewRequest(http.MethodPost, f.url+"/v1/messages", strings.NewReader(`{"model":"c","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set(header, value)
		resp, err := f.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		all := f.srv.Requests()
		key := strings.TrimPrefix(value, "Bearer ")
		if got := all[len(all)-1].Key; got != fakellm.KeyID(key) || got == "" || strings.Contains(got, key) {
			t.Errorf("%s: logged key %q, want %q", header, got, fakellm.KeyID(key))
		}
	}
}
