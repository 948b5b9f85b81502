package fakellm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"clopen.dev/services/engine-worker/fakellm"
)

// postRaw posts body to path and returns the response with its body read.
func postRaw(t *testing.T, ctx context.Context, f *fixture, path, body string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.hc.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// forcedErrorRequests are one request per wire format carrying prompt %q.
var forcedErrorRequests = []struct{ format, path, body string }{
	{"anthropic", "/v1/messages?beta=true", `{"model":"m","stream":true,"messages":[{"role":"user","content":%q}]}`},
	{"chat", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":%q}]}`},
	{"responses", "/v1/responses", `{"model":"m","stream":true,"input":[{"role":"user","content":%q}]}`},
	{"gemini", "/v1beta/models/m:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":%q}]}]}`},
}

// @@RATELIMIT@@ answers 429 with Retry-After and each provider's
// rate-limit error, so each SDK classifies it as a rate limit.
func TestRateLimit(t *testing.T) {
	wantType := map[string]string{
		"anthropic": `"type":"rate_limit_error"`,
		"chat":      `"code":"rate_limit_exceeded"`,
		"responses": `"code":"rate_limit_exceeded"`,
		"gemini":    `"status":"RESOURCE_EXHAUSTED"`,
	}
	for _, rq := range forcedErrorRequests {
		t.Run(rq.format, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{RetryAfter: 2 * time.Second})
			resp, body, err := postRaw(t, testContext(t), f, rq.path, strings.Replace(rq.body, "%q", `"@@RATELIMIT@@ hi"`, 1))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
				t.Errorf("answer = %d, Retry-After %q; want 429 and 2", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			if !strings.Contains(body, wantType[rq.format]) || !strings.Contains(body, "@@RATELIMIT@@ rate limit reached; retry after 2s") {
				t.Errorf("body = %s, want %s and the rate-limit message", body, wantType[rq.format])
			}
		})
	}
	t.Run("openai sdk", func(t *testing.T) {
		f := newFixture(t, fakellm.Config{})
		_, err := chatStream(testContext(t), t, newOpenAI(f), chatParams("@@RATELIMIT@@"))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Code != "rate_limit_exceeded" {
			t.Errorf("err = %v, want a 429 *openai.Error with code rate_limit_exceeded", err)
		}
	})
}

// @@SLOW_ERROR@@ keeps the request waiting for Config.ErrorDelay, sending
// nothing, then answers 500 with the provider's error body.
func TestSlowError(t *testing.T) {
	for _, rq := range forcedErrorRequests {
		t.Run(rq.format, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{ErrorDelay: 300 * time.Millisecond})
			start := time.Now()
			resp, body, err := postRaw(t, testContext(t), f, rq.path, strings.Replace(rq.body, "%q", `"@@SLOW_ERROR@@ hi"`, 1))
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took < 300*time.Millisecond {
				t.Errorf("answered after %v, want at least the 300 ms delay", took)
			}
			var got struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if resp.StatusCode != http.StatusInternalServerError || json.Unmarshal([]byte(body), &got) != nil ||
				got.Error.Message != "fakellm: @@SLOW_ERROR@@ forced a server error after a delay" {
				t.Errorf("answer = %d %s, want 500 with the slow error's message", resp.StatusCode, body)
			}
		})
	}
}

// A client that stops waiting for @@SLOW_ERROR@@ ends the handler.
func TestSlowErrorEndsOnHangUp(t *testing.T) {
	f := newFixture(t, fakellm.Config{ErrorDelay: time.Hour})
	ctx, cancel := context.WithCancel(testContext(t))
	errc := make(chan error, 1)
	go func() {
		_, _, err := postRaw(t, ctx, f, "/v1/chat/completions", `{"messages":[{"role":"user","content":"@@SLOW_ERROR@@"}]}`)
		errc <- err
	}()
	f.assertStalled(t)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("POST = %v, want context.Canceled", err)
	}
	f.waitHandler(t, 5*time.Second)
}
