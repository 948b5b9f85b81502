package modelproxy_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// loopback is the allow-list that lets a test's proxy reach its upstream.
var loopback = modelproxy.Options{Allow: []string{"127.0.0.1"}}

// seen is what an upstream got.
type seen struct {
	mu  sync.Mutex
	req []*http.Request
}

func (s *seen) last(t *testing.T) *http.Request {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.req) == 0 {
		t.Fatal("the upstream got no request")
	}
	return s.req[len(s.req)-1]
}

// upstream records each request and answers with an Anthropic message.
func upstream(t *testing.T) (*httptest.Server, *seen) {
	t.Helper()
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.req = append(s.req, r.Clone(context.Background()))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"type":"message","usage":{"input_tokens":3,"output_tokens":5}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, s
}

// testProxy is a proxy that admits one placeholder, counted on its meter.
type testProxy struct {
	*modelproxy.Proxy
	token string
	meter *modelproxy.Meter
}

func (p testProxy) Token() string            { return p.token }
func (p testProxy) Meter() *modelproxy.Meter { return p.meter }

func proxy(t *testing.T, up modelproxy.Upstream, opt modelproxy.Options) (testProxy, *httptest.Server) {
	t.Helper()
	p, err := modelproxy.New(up, opt)
	if err != nil {
		t.Fatal(err)
	}
	tp := testProxy{Proxy: p, token: modelproxy.NewToken(), meter: &modelproxy.Meter{}}
	p.Admit(tp.token, tp.meter)
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	return tp, front
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPlaceholderRequired(t *testing.T) {
	up, got := upstream(t)
	p, front := proxy(t, modelproxy.Upstream{BaseURL: up.URL, Scheme: modelproxy.AnthropicKey, Secret: "sk-real"}, loopback)
	if !strings.HasPrefix(p.Token(), modelproxy.TokenPrefix) || len(p.Token()) != len(modelproxy.TokenPrefix)+32 {
		t.Fatalf("token %q: want %s and 32 hex digits", p.Token(), modelproxy.TokenPrefix)
	}
	for _, tt := range []struct {
		name   string
		header map[string]string
	}{
		{"no credential", nil},
		{"a key of its own", map[string]string{"X-Api-Key": "sk-ant-other"}},
		{"the real key", map[string]string{"X-Api-Key": "sk-real"}},
		{"the placeholder cut short", map[string]string{"X-Api-Key": p.Token()[:len(p.Token())-1]}},
		{"the placeholder and another key", map[string]string{"X-Api-Key": p.Token(), "Authorization": "Bearer sk-other"}},
		{"another proxy's placeholder", map[string]string{"Authorization": "Bearer " + modelproxy.TokenPrefix + strings.Repeat("0", 32)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(`{}`))
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			code, body := do(t, req)
			if code != http.StatusUnauthorized || !strings.Contains(body, "proxy token") {
				t.Errorf("got %d %s; want 401 saying the proxy token is missing", code, body)
			}
		})
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.req) != 0 {
		t.Errorf("%d refused requests reached the provider", len(got.req))
	}
}

func TestCredentialInjected(t *testing.T) {
	for _, tt := range []struct {
		scheme     modelproxy.Scheme
		present    func(r *http.Request, token string)
		header     string
		want       string
		wantBeta   string
		query      string
		wantPath   string
		basePrefix string
	}{
		{scheme: modelproxy.AnthropicKey, present: func(r *http.Request, tok string) { r.Header.Set("X-Api-Key", tok) },
			header: "X-Api-Key", want: "sk-ant-real", wantPath: "/v1/messages"},
		{scheme: modelproxy.AnthropicOAuth, present: func(r *http.Request, tok string) {
			r.Header.Set("X-Api-Key", tok)
			r.Header.Set("Anthropic-Beta", "fine-grained-tool-streaming-2025-05-14")
		}, header: "Authorization", want: "Bearer sk-ant-oat-real", wantBeta: "oauth-2025-04-20", wantPath: "/v1/messages"},
		{scheme: modelproxy.Bearer, present: func(r *http.Request, tok string) { r.Header.Set("Authorization", "Bearer "+tok) },
			header: "Authorization", want: "Bearer sk-openai-real", basePrefix: "/openai/v1", wantPath: "/openai/v1/v1/messages"},
		{scheme: modelproxy.Google, present: func(r *http.Request, tok string) { r.Header.Set("X-Goog-Api-Key", tok) },
			header: "X-Goog-Api-Key", want: "AIza-real", wantPath: "/v1/messages"},
		{scheme: modelproxy.Google, present: func(r *http.Request, tok string) {}, query: "key",
			header: "X-Goog-Api-Key", want: "AIza-real", wantPath: "/v1/messages"},
	} {
		t.Run(string(tt.scheme)+tt.query, func(t *testing.T) {
			up, got := upstream(t)
			secret := strings.TrimPrefix(tt.want, "Bearer ")
			p, front := proxy(t, modelproxy.Upstream{BaseURL: up.URL + tt.basePrefix, Scheme: tt.scheme, Secret: secret}, loopback)
			u := front.URL + "/v1/messages?alt=sse"
			if tt.query != "" {
				u += "&key=" + p.Token()
			}
			req, _ := http.NewRequest("POST", u, strings.NewReader(`{}`))
			tt.present(req, p.Token())
			if code, body := do(t, req); code != http.StatusOK {
				t.Fatalf("got %d %s", code, body)
			}
			r := got.last(t)
			if v := r.Header.Get(tt.header); v != tt.want {
				t.Errorf("%s = %q, want %q", tt.header, v, tt.want)
			}
			for k, vs := range r.Header {
				for _, v := range vs {
					if strings.Contains(v, modelproxy.TokenPrefix) {
						t.Errorf("the placeholder reached the provider in %s", k)
					}
				}
			}
			if strings.Contains(r.URL.RawQuery, modelproxy.TokenPrefix) || r.URL.Query().Get("alt") != "sse" {
				t.Errorf("query %q: want alt=sse kept and no placeholder", r.URL.RawQuery)
			}
			if r.URL.Path != tt.wantPath {
				t.Errorf("path %q, want %q", r.URL.Path, tt.wantPath)
			}
			if tt.wantBeta != "" && !strings.Contains(strings.Join(r.Header.Values("Anthropic-Beta"), ","), tt.wantBeta) {
				t.Errorf("anthropic-beta %q, want %s added", r.Header.Values("Anthropic-Beta"), tt.wantBeta)
			}
			if tt.wantBeta != "" && !strings.Contains(strings.Join(r.Header.Values("Anthropic-Beta"), ","), "fine-grained") {
				t.Errorf("anthropic-beta %q: the agent's own flag was lost", r.Header.Values("Anthropic-Beta"))
			}
			if u, n := settled(p.Meter()); n != 1 || u.InputTokens != 3 || u.OutputTokens != 5 {
				t.Errorf("meter %+v after %d responses, want 3 in, 5 out after 1", u, n)
			}
		})
	}
}

// TestStreamFlushed: each event reaches the agent when the provider sends
// it, not when the response ends.
func TestStreamFlushed(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n")
	}))
	defer up.Close()
	defer close(release)
	p, front := proxy(t, modelproxy.Upstream{BaseURL: up.URL, Scheme: modelproxy.AnthropicKey, Secret: "k"}, loopback)
	req, _ := http.NewRequest("POST", front.URL+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", p.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(resp.Body).ReadString('\n')
		first <- l
	}()
	select {
	case l := <-first:
		if !strings.Contains(l, "message_start") {
			t.Errorf("first line %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first event did not come through before the stream ended: the proxy buffers")
	}
}

// TestStreamMetered: an event stream's usage is counted once it ends, as
// the provider's running totals say.
func TestStreamMetered(t *testing.T) {
	llm := fakellm.New(fakellm.Config{})
	up := httptest.NewServer(llm)
	defer up.Close()
	for _, tt := range []struct {
		name, scheme, path, body string
		auth                     func(*http.Request, string)
	}{
		{"anthropic stream", "anthropic-key", "/v1/messages", `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			func(r *http.Request, tok string) { r.Header.Set("X-Api-Key", tok) }},
		{"anthropic message", "anthropic-key", "/v1/messages", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`,
			func(r *http.Request, tok string) { r.Header.Set("X-Api-Key", tok) }},
		{"chat stream", "bearer", "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			func(r *http.Request, tok string) { r.Header.Set("Authorization", "Bearer "+tok) }},
		{"chat", "bearer", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			func(r *http.Request, tok string) { r.Header.Set("Authorization", "Bearer "+tok) }},
		{"responses stream", "bearer", "/v1/responses", `{"model":"m","stream":true,"input":"hi"}`,
			func(r *http.Request, tok string) { r.Header.Set("Authorization", "Bearer "+tok) }},
		{"responses", "bearer", "/v1/responses", `{"model":"m","input":"hi"}`,
			func(r *http.Request, tok string) { r.Header.Set("Authorization", "Bearer "+tok) }},
		{"gemini stream", "google", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			func(r *http.Request, tok string) { r.Header.Set("X-Goog-Api-Key", tok) }},
		{"gemini", "google", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
			func(r *http.Request, tok string) { r.Header.Set("X-Goog-Api-Key", tok) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, front := proxy(t, modelproxy.Upstream{BaseURL: up.URL, Scheme: modelproxy.Scheme(tt.scheme), Secret: "real"}, loopback)
			req, _ := http.NewRequest("POST", front.URL+tt.path, strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			tt.auth(req, p.Token())
			code, body := do(t, req)
			if code != http.StatusOK {
				t.Fatalf("got %d %s", code, body)
			}
			u, n := settled(p.Meter())
			if n != 1 || u.InputTokens <= 0 || u.OutputTokens <= 0 {
				t.Errorf("meter %+v after %d responses; want positive counts after 1; body %s", u, n, body)
			}
		})
	}
}

// TestEgressRefusedAtConnect: a name is checked for what it resolves to
// when the connection is made, and the metadata address is refused too.
func TestEgressRefusedAtConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, tt := range []struct{ name, base, want string }{
		{"a name resolving to loopback", "https://localhost:" + port, "loopback"},
		{"the metadata address", "https://169.254.169.254", "link-local"},
		{"a private address", "https://10.1.2.3", "private"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, front := proxy(t, modelproxy.Upstream{BaseURL: tt.base, Scheme: modelproxy.Bearer, Secret: "real"}, modelproxy.Options{})
			req, _ := http.NewRequest("POST", front.URL+"/v1/chat/completions", strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+p.Token())
			code, body := do(t, req)
			if code != http.StatusBadGateway || !strings.Contains(body, "refusing to connect") || !strings.Contains(body, tt.want) {
				t.Errorf("got %d %s; want 502 refusing a %s address", code, body, tt.want)
			}
		})
	}
	t.Run("plain http to a host not allowed", func(t *testing.T) {
		if _, err := modelproxy.New(modelproxy.Upstream{BaseURL: "http://api.example.com", Scheme: modelproxy.Bearer}, modelproxy.Options{}); err == nil {
			t.Error("a plain http upstream was accepted with no allow-list")
		}
	})
}

// TestPoolRoutes: a tenant's credential always gets the same proxy, and a
// chat the same placeholder on it; another tenant or key gets another
// proxy, on its own port and socket.
func TestPoolRoutes(t *testing.T) {
	up, got := upstream(t)
	dir := t.TempDir()
	pool := &modelproxy.Pool{Dir: dir, Options: loopback}
	defer pool.Close()
	a1, err := pool.Route("a", "chat", modelproxy.Upstream{BaseURL: up.URL, Scheme: modelproxy.AnthropicKey, Secret: "ka"})
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := pool.Route("a", "chat", modelproxy.Upstream{BaseURL: up.URL, Scheme: modelproxy.AnthropicKey, Secret: "ka"})
	b, _ := pool.Route("b", "chat", modelproxy.Upstream{BaseURL: up.URL, Scheme: modelproxy.AnthropicKey, Secret: "ka"})
	if a1 != a2 || a1.Route == b.Route || a1.Port == b.Port || a1.Socket == b.Socket || a1.Token == b.Token || a1.Meter == b.Meter {
		t.Fatalf("routes a %+v, a again %+v, b %+v", a1, a2, b)
	}
	if !strings.HasPrefix(a1.Token, modelproxy.TokenPrefix) || len(a1.Token) != len(modelproxy.TokenPrefix)+32 {
		t.Errorf("token %q: want %s and 32 hex digits", a1.Token, modelproxy.TokenPrefix)
	}
	if r, ok := pool.Lookup(b.URL); !ok || r != b.Route {
		t.Errorf("Lookup(%s) = %v, %v", b.URL, r, ok)
	}
	if fi, err := os.Stat(a1.Socket); err != nil || fi.Mode().Perm() != 0o666 || filepath.Dir(a1.Socket) != dir {
		t.Fatalf("socket %s: %v %v", a1.Socket, fi, err)
	}
	c := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", a1.Socket)
	}}}
	req, _ := http.NewRequest("POST", a1.URL+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", a1.Token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || got.last(t).Header.Get("X-Api-Key") != "ka" {
		t.Errorf("through the socket: %d, key %q", resp.StatusCode, got.last(t).Header.Get("X-Api-Key"))
	}
}

func TestParseUsage(t *testing.T) {
	for _, tt := range []struct {
		name   string
		body   string
		stream bool
		want   events.TokenUsage
	}{
		{"anthropic message", `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":34}}`, false,
			events.TokenUsage{InputTokens: 12, OutputTokens: 34, CacheCreationInputTokens: 100, CacheReadInputTokens: 2000}},
		{"anthropic stream", "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":10,\"output_tokens\":1}}}\r\n\r\nevent: ping\r\ndata: {\"type\":\"ping\"}\r\n\r\nevent: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\r\n\r\nevent: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\r\n\r\nevent: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n", true,
			events.TokenUsage{InputTokens: 25, OutputTokens: 15, CacheReadInputTokens: 10}},
		{"chat completion", `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":4}}}`, false,
			events.TokenUsage{InputTokens: 15, OutputTokens: 10, CacheReadInputTokens: 4}},
		{"chat stream", "data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\ndata: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":2,\"total_tokens\":10}}\n\ndata: [DONE]\n\n", true,
			events.TokenUsage{InputTokens: 8, OutputTokens: 2}},
		{"responses", `{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":328,"input_tokens_details":{"cached_tokens":128},"output_tokens":52,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":380}}`, false,
			events.TokenUsage{InputTokens: 200, OutputTokens: 52, CacheReadInputTokens: 128}},
		{"responses stream", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"usage\":null}}\n\nevent: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"usage\":{\"input_tokens\":40,\"output_tokens\":6,\"total_tokens\":46}}}\n\n", true,
			events.TokenUsage{InputTokens: 40, OutputTokens: 6}},
		{"gemini", `{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"}}],"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":7,"thoughtsTokenCount":3,"cachedContentTokenCount":1,"totalTokenCount":21}}`, false,
			events.TokenUsage{InputTokens: 10, OutputTokens: 10, CacheReadInputTokens: 1}},
		{"gemini stream", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"h\"}]}}],\"usageMetadata\":{\"promptTokenCount\":11,\"candidatesTokenCount\":1}}\r\n\r\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"i\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":11,\"candidatesTokenCount\":4,\"totalTokenCount\":15}}\r\n\r\n", true,
			events.TokenUsage{InputTokens: 11, OutputTokens: 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := modelproxy.ParseUsage([]byte(tt.body), tt.stream)
			if !ok || got != tt.want {
				t.Errorf("got %+v (%v), want %+v", got, ok, tt.want)
			}
		})
	}
	for _, body := range []string{``, `not json`, `{"usage":null}`, `{"choices":[]}`, "data: [DONE]\n\n"} {
		if u, ok := modelproxy.ParseUsage([]byte(body), strings.HasPrefix(body, "data")); ok {
			t.Errorf("%q: read usage %+v from a body with none", body, u)
		}
	}
}

func FuzzParseUsage(f *testing.F) {
	f.Add([]byte(`{"usage":{"input_tokens":1,"output_tokens":2}}`), false)
	f.Add([]byte("data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25}}}\n\ndata: {\"usageMetadata\":{\"promptTokenCount\":3}}\n"), true)
	f.Add([]byte(`{"response":{"usage":{"input_tokens":-5,"input_tokens_details":{"cached_tokens":9}}}}`), false)
	f.Add([]byte(`{"usage":{"prompt_tokens":2,"prompt_tokens_details":{"cached_tokens":7}},"usageMetadata":{"promptTokenCount":1,"cachedContentTokenCount":4}}`), false)
	f.Fuzz(func(t *testing.T, body []byte, stream bool) {
		u, ok := modelproxy.ParseUsage(body, stream)
		if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadInputTokens < 0 || u.CacheCreationInputTokens < 0 {
			t.Errorf("negative counts %+v", u)
		}
		if !ok && u != (events.TokenUsage{}) {
			t.Errorf("usage %+v reported as none", u)
		}
		// Fed in pieces, a stream reads the same.
		if stream && len(body) > 1 {
			half := len(body) / 2
			v, ok2 := modelproxy.ParseUsageChunks([][]byte{body[:half], body[half:]}, stream)
			if v != u || ok2 != ok {
				t.Errorf("in two pieces %+v %v, whole %+v %v", v, ok2, u, ok)
			}
		}
	})
}

// settled is the meter's usage once a response is counted: that happens
// when the proxy's handler ends, just after the agent has the last byte.
func settled(m *modelproxy.Meter) (events.TokenUsage, int64) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		u, n := m.Usage()
		if n > 0 || time.Now().After(deadline) {
			return u, n
		}
		time.Sleep(5 * time.Millisecond)
	}
}
