package modelproxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// chatClient sends a chat's requests to its route, through the socket as a
// confined agent does.
type chatClient struct {
	r modelproxy.ChatRoute
	c *http.Client
}

func newChat(t *testing.T, pool *modelproxy.Pool, tenant, chat string, up modelproxy.Upstream) chatClient {
	t.Helper()
	r, err := pool.Route(tenant, chat, up)
	if err != nil {
		t.Fatal(err)
	}
	return chatClient{r: r, c: &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", r.Socket)
	}}}}
}

// stream sends a streamed Messages request with token and returns the
// response, whose body the caller reads.
func (c chatClient) stream(t *testing.T, token, prompt string) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": true,
		"messages": []map[string]any{{"role": "user", "content": prompt}}})
	req, _ := http.NewRequest("POST", c.r.URL+"/v1/messages", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", token)
	resp, err := c.c.Do(req)
	if err != nil {
		t.Error(err)
		return nil
	}
	return resp
}

// reported reads what an Anthropic event stream says it spent, the way
// the Messages API defines it (message_start's input, message_delta's
// running output), independently of the proxy's parser.
func reported(t *testing.T, body string) events.TokenUsage {
	t.Helper()
	var u events.TokenUsage
	for l := range strings.Lines(body) {
		data, ok := strings.CutPrefix(strings.TrimSpace(l), "data: ")
		if !ok {
			continue
		}
		type usage struct {
			Input  int64 `json:"input_tokens"`
			Output int64 `json:"output_tokens"`
		}
		var ev struct {
			Type    string
			Message struct{ Usage usage }
			Usage   usage
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "message_start":
			u.InputTokens, u.OutputTokens = ev.Message.Usage.Input, ev.Message.Usage.Output
		case "message_delta":
			u.OutputTokens = ev.Usage.Output
		}
	}
	if u.InputTokens == 0 || u.OutputTokens == 0 {
		t.Errorf("no usage in the stream %q", body)
	}
	return u
}

// TestChatsMeteredApart: two chats of one tenant share a proxy, each with
// its own placeholder, and stream at the same time; each run's span counts
// exactly what the provider reported to its own chat's requests.
func TestChatsMeteredApart(t *testing.T) {
	llm := httptest.NewServer(fakellm.New(fakellm.Config{}))
	defer llm.Close()
	pool := &modelproxy.Pool{Dir: t.TempDir(), Options: loopback}
	defer pool.Close()
	up := modelproxy.Upstream{BaseURL: llm.URL, Scheme: modelproxy.AnthropicKey, Secret: "real"}
	chats := []chatClient{newChat(t, pool, "t", "chat-a", up), newChat(t, pool, "t", "chat-b", up)}
	if chats[0].r.Route != chats[1].r.Route || chats[0].r.Token == chats[1].r.Token {
		t.Fatalf("two chats of a tenant: want one proxy and two placeholders, got %+v and %+v", chats[0].r, chats[1].r)
	}
	spans := []*modelproxy.Span{pool.Begin("t", "chat-a"), pool.Begin("t", "chat-b")}
	want := make([]events.TokenUsage, 2)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range chats {
		for j := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Prompts of different lengths: fakellm's counts differ.
				resp := c.stream(t, c.r.Token, strings.Repeat(fmt.Sprintf("chat %d request %d ", i, j), 1+3*i+j))
				if resp == nil {
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 {
					t.Errorf("chat %d: %d %s", i, resp.StatusCode, b)
					return
				}
				u := reported(t, string(b))
				mu.Lock()
				want[i] = want[i].Add(u)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, sp := range spans {
		got, ok := sp.End(ctx)
		if !ok || got != want[i] {
			t.Errorf("chat %d's run: metered %+v (%v), the provider reported %+v", i, got, ok, want[i])
		}
		t.Logf("chat %d: %+v", i, got)
	}
	if want[0] == want[1] {
		t.Errorf("both chats spent %+v: the test cannot tell them apart", want[0])
	}
	if total, n := chats[0].r.Meter.Usage(); total != want[0] || n != 8 {
		t.Errorf("chat a's meter: %+v over %d responses, want %+v over 8", total, n, want[0])
	}
}

// TestPlaceholderOfAnotherChat: a chat's placeholder bills only that chat;
// on another tenant's proxy, or made up, or presented with a second one,
// it is refused with 401 and nothing is forwarded or counted.
func TestPlaceholderOfAnotherChat(t *testing.T) {
	up, got := upstream(t)
	pool := &modelproxy.Pool{Dir: t.TempDir(), Options: loopback}
	defer pool.Close()
	key := modelproxy.Upstream{BaseURL: up.URL, Scheme: modelproxy.AnthropicKey, Secret: "ka"}
	a := newChat(t, pool, "t", "chat-a", key)
	b := newChat(t, pool, "t", "chat-b", key)
	other := newChat(t, pool, "u", "chat-c", key) // another tenant, the same key: another proxy
	post := func(c chatClient, header map[string]string) int {
		req, _ := http.NewRequest("POST", c.r.URL+"/v1/messages", strings.NewReader(`{}`))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	sb := pool.Begin("t", "chat-b")
	for _, tt := range []struct {
		name   string
		via    chatClient
		header map[string]string
	}{
		{"chat a's placeholder on another tenant's proxy", other, map[string]string{"X-Api-Key": a.r.Token}},
		{"a placeholder the pool never gave", a, map[string]string{"X-Api-Key": modelproxy.NewToken()}},
		{"chat a's and chat b's at once", a, map[string]string{"X-Api-Key": a.r.Token, "Authorization": "Bearer " + b.r.Token}},
	} {
		if code := post(tt.via, tt.header); code != http.StatusUnauthorized {
			t.Errorf("%s: got %d, want 401", tt.name, code)
		}
	}
	if len(got.req) != 0 {
		t.Errorf("a refused request reached the provider: %d requests", len(got.req))
	}
	if code := post(a, map[string]string{"X-Api-Key": a.r.Token}); code != 200 {
		t.Fatalf("chat a's own placeholder: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if u, _ := sb.End(ctx); u != (events.TokenUsage{}) {
		t.Errorf("chat b's run was billed %+v for requests it never made", u)
	}
	if u, n := settled(a.r.Meter); n != 1 || u != (events.TokenUsage{InputTokens: 3, OutputTokens: 5}) {
		t.Errorf("chat a's meter %+v over %d responses, want its one response", u, n)
	}
}

// TestStreamOutlivesTurn: a response still streaming when its run ends is
// the run's; End waits for it, and when it gives up, counts what the
// stream has reported so far and leaves the rest to no run.
func TestStreamOutlivesTurn(t *testing.T) {
	const slow = 700 * time.Millisecond
	llm := httptest.NewServer(fakellm.New(fakellm.Config{SlowFor: slow}))
	defer llm.Close()
	pool := &modelproxy.Pool{Dir: t.TempDir(), Options: loopback}
	defer pool.Close()
	c := newChat(t, pool, "t", "chat", modelproxy.Upstream{BaseURL: llm.URL, Scheme: modelproxy.AnthropicKey, Secret: "real"})

	// start streams a reply that stalls after its first text delta, and
	// returns once that delta has arrived, with the whole body to come.
	start := func(t *testing.T) <-chan string {
		resp := c.stream(t, c.r.Token, "@@SLOW@@ take your time")
		if resp == nil {
			t.FailNow()
		}
		br := bufio.NewReader(resp.Body)
		var head strings.Builder
		for !strings.Contains(head.String(), "text_delta") {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before its first delta: %v; read %q", err, head.String()+l)
			}
			head.WriteString(l)
		}
		body := make(chan string, 1)
		go func() {
			defer resp.Body.Close()
			rest, _ := io.ReadAll(br)
			body <- head.String() + string(rest)
		}()
		return body
	}

	t.Run("End waits for it", func(t *testing.T) {
		sp := pool.Begin("t", "chat")
		body := start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		began := time.Now()
		got, ok := sp.End(ctx)
		want := reported(t, <-body)
		if !ok || got != want {
			t.Errorf("metered %+v (%v), the provider reported %+v", got, ok, want)
		}
		if waited := time.Since(began); waited < slow/2 {
			t.Errorf("End returned after %v, before the stream ended", waited)
		}
	})

	t.Run("Sofar counts it while it streams", func(t *testing.T) {
		sp := pool.Begin("t", "chat")
		body := start(t)
		mid, ok := sp.Sofar()
		whole := reported(t, <-body)
		// message_start said the input and one output token so far.
		if want := (events.TokenUsage{InputTokens: whole.InputTokens, OutputTokens: 1}); !ok || mid != want {
			t.Errorf("Sofar mid-stream = %+v (%v), want what the stream had reported: %+v", mid, ok, want)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if got, _ := sp.End(ctx); got != whole {
			t.Errorf("metered %+v at the end, the provider reported %+v", got, whole)
		}
	})

	t.Run("past End's deadline", func(t *testing.T) {
		before := c.r.Meter.Unattributed()
		sp := pool.Begin("t", "chat")
		body := start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		got, _ := sp.End(ctx)
		whole := reported(t, <-body)
		// message_start said the input and one output token so far.
		if want := (events.TokenUsage{InputTokens: whole.InputTokens, OutputTokens: 1}); got != want {
			t.Errorf("metered %+v at the deadline, want what the stream had reported: %+v", got, want)
		}
		deadline := time.Now().Add(5 * time.Second)
		rest := events.TokenUsage{OutputTokens: whole.OutputTokens - 1}
		for c.r.Meter.Unattributed() != before.Add(rest) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if late := c.r.Meter.Unattributed(); late != before.Add(rest) {
			t.Errorf("unattributed %+v after the stream ended, want %+v", late, before.Add(rest))
		}
	})
}

// TestBetweenRuns: a request while no run is open belongs to no run, and
// a run whose chat was never routed has nothing metered.
func TestBetweenRuns(t *testing.T) {
	up, _ := upstream(t)
	pool := &modelproxy.Pool{Dir: t.TempDir(), Options: loopback}
	defer pool.Close()
	ctx := context.Background()
	if u, ok := pool.Begin("t", "unrouted").End(ctx); ok {
		t.Errorf("a run never routed through a proxy metered %+v", u)
	}
	c := newChat(t, pool, "t", "chat", modelproxy.Upstream{BaseURL: up.URL, Scheme: modelproxy.AnthropicKey, Secret: "ka"})
	req, _ := http.NewRequest("POST", c.r.URL+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", c.r.Token)
	resp, err := c.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sp := pool.Begin("t", "chat")
	if _, err := pool.Route("t", "chat", modelproxy.Upstream{BaseURL: up.URL, Scheme: modelproxy.AnthropicKey, Secret: "ka"}); err != nil {
		t.Fatal(err)
	}
	if u, ok := sp.End(ctx); !ok || u != (events.TokenUsage{}) {
		t.Errorf("a routed run with no request: %+v (%v), want zero and metered", u, ok)
	}
	settled(c.r.Meter)
	if u := c.r.Meter.Unattributed(); u != (events.TokenUsage{InputTokens: 3, OutputTokens: 5}) {
		t.Errorf("unattributed %+v, want the request made between runs", u)
	}
}

// TestStreamBrokenOff: a stream the provider breaks off is still counted,
// as far as it got, and is not left in flight for End to wait on.
func TestStreamBrokenOff(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-stream
	}))
	defer up.Close()
	pool := &modelproxy.Pool{Dir: t.TempDir(), Options: loopback}
	defer pool.Close()
	c := newChat(t, pool, "t", "chat", modelproxy.Upstream{BaseURL: up.URL, Scheme: modelproxy.AnthropicKey, Secret: "real"})
	sp := pool.Begin("t", "chat")
	if resp := c.stream(t, c.r.Token, "hi"); resp != nil {
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	settled(c.r.Meter)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	got, ok := sp.End(ctx)
	if want := (events.TokenUsage{InputTokens: 7, OutputTokens: 1}); !ok || got != want {
		t.Errorf("metered %+v (%v), want the %+v the stream reported before it broke", got, ok, want)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("End waited %v for a response that had already broken off", d)
	}
}

// TestFailedCallsRecorded: the span of a run records every model call the
// provider failed (429, 5xx, and a provider the proxy could not reach) in
// order, and nothing for a call that worked or one made after the run.
func TestFailedCallsRecorded(t *testing.T) {
	llm := httptest.NewServer(fakellm.New(fakellm.Config{RetryAfter: time.Second}))
	defer llm.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	pool := &modelproxy.Pool{Dir: t.TempDir(), Options: loopback}
	defer pool.Close()
	c := newChat(t, pool, "t", "chat", modelproxy.Upstream{BaseURL: llm.URL, Scheme: modelproxy.AnthropicKey, Secret: "k"})
	gone := newChat(t, pool, "t", "gone", modelproxy.Upstream{BaseURL: deadURL, Scheme: modelproxy.AnthropicKey, Secret: "k"})
	call := func(c chatClient, prompt string) {
		if resp := c.stream(t, c.r.Token, prompt); resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	sp := pool.Begin("t", "chat")
	call(c, "@@RATELIMIT@@ hi")
	call(c, "hello")
	call(c, "@@ERROR@@ hi")
	got, n := sp.Failures(0)
	if fmt.Sprint(got) != "[429 500]" || n != 2 {
		t.Errorf("failures = %v (%d), want [429 500]", got, n)
	}
	if rest, n := sp.Failures(1); fmt.Sprint(rest) != "[500]" || n != 2 {
		t.Errorf("failures from the second = %v (%d), want [500]", rest, n)
	}
	sp.End(context.Background())
	call(c, "@@ERROR@@ after the run")
	if got, n := sp.Failures(0); n != 2 {
		t.Errorf("a call after End was recorded on the ended run: %v", got)
	}

	unreachable := pool.Begin("t", "gone")
	call(gone, "hi")
	if got, _ := unreachable.Failures(0); fmt.Sprint(got) != "[502]" {
		t.Errorf("failures of a provider the proxy cannot reach = %v, want [502]", got)
	}
	unreachable.End(context.Background())
}
