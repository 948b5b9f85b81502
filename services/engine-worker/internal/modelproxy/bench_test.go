package modelproxy_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// BenchmarkFirstToken measures the time from sending a streamed Messages
// request to reading its first text delta (ns-to-first-token/op; ns/op is
// the whole stream), straight to fakellm and through a proxy on a unix
// socket (as a confined agent reaches it). The difference is what the
// proxy adds to a turn's time to first token.
func BenchmarkFirstToken(b *testing.B) {
	llm := httptest.NewServer(fakellm.New(fakellm.Config{}))
	defer llm.Close()
	pool := &modelproxy.Pool{Dir: b.TempDir(), Options: loopback}
	defer pool.Close()
	r, err := pool.Route("t", "chat", modelproxy.Upstream{BaseURL: llm.URL, Scheme: modelproxy.AnthropicKey, Secret: "real"})
	if err != nil {
		b.Fatal(err)
	}
	// Each request on a connection of its own, both ways: see
	// docs/PERFORMANCE.md for what reusing the agent's connection showed.
	viaSocket := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", r.Socket)
	}}}
	for _, c := range []struct {
		name, url, key string
		client         *http.Client
	}{
		{"direct", llm.URL, "real", &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}},
		{"proxy", r.URL, r.Token, viaSocket},
	} {
		b.Run(c.name, func(b *testing.B) {
			var sum time.Duration
			for b.Loop() {
				sum += firstToken(b, c.client, c.url, c.key)
			}
			b.ReportMetric(float64(sum.Nanoseconds())/float64(b.N), "ns-to-first-token/op")
		})
	}
}

// firstToken sends one streamed request, reads the whole stream (as an
// agent does) and returns the time its first text delta took.
func firstToken(b *testing.B, c *http.Client, base, key string) time.Duration {
	start := time.Now()
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader(
		`{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hello there"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var first time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if first == 0 && strings.Contains(sc.Text(), "content_block_delta") {
			first = time.Since(start)
		}
	}
	if first == 0 || sc.Err() != nil {
		b.Fatalf("no text delta (status %d): %v", resp.StatusCode, sc.Err())
	}
	return first
}
