package stack

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/gateway/api"
)

// provider is a model provider as the test sees it: fakellm behind a
// recorder that adds up the usage each response reports, read the way the
// Messages API defines it, apart from anything in the system under test.
type provider struct {
	next http.Handler
	mu   sync.Mutex
	used events.TokenUsage
	n    int
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w}
	p.next.ServeHTTP(rec, r)
	u := anthropicUsage(rec.body.Bytes())
	p.mu.Lock()
	p.used = p.used.Add(u)
	if u != (events.TokenUsage{}) {
		p.n++
	}
	p.mu.Unlock()
}

func (p *provider) usage() (events.TokenUsage, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used, p.n
}

type recorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() { http.NewResponseController(r.ResponseWriter).Flush() }

// anthropicUsage reads a Messages response: a JSON message's usage, or an
// event stream's message_start usage updated by message_delta's.
func anthropicUsage(body []byte) events.TokenUsage {
	type usage struct {
		Input      *int64 `json:"input_tokens"`
		Output     *int64 `json:"output_tokens"`
		CacheWrite *int64 `json:"cache_creation_input_tokens"`
		CacheRead  *int64 `json:"cache_read_input_tokens"`
	}
	var u events.TokenUsage
	read := func(v *usage) {
		for _, f := range []struct {
			dst *int64
			src *int64
		}{{&u.InputTokens, v.Input}, {&u.OutputTokens, v.Output}, {&u.CacheCreationInputTokens, v.CacheWrite}, {&u.CacheReadInputTokens, v.CacheRead}} {
			if f.src != nil {
				*f.dst = *f.src
			}
		}
	}
	docs := [][]byte{body}
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		docs = nil
		for l := range bytes.Lines(body) {
			if d, ok := bytes.CutPrefix(bytes.TrimSpace(l), []byte("data:")); ok {
				docs = append(docs, bytes.TrimSpace(d))
			}
		}
	}
	for _, d := range docs {
		var ev struct {
			Usage   *usage `json:"usage"`
			Message *struct {
				Usage *usage `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(d, &ev) != nil {
			continue
		}
		if ev.Message != nil && ev.Message.Usage != nil {
			read(ev.Message.Usage)
		}
		if ev.Usage != nil {
			read(ev.Usage)
		}
	}
	return u
}

// TestMeteredUsageEndToEnd runs Claude Code confined, through the model
// proxy, against a provider that counts what it reports, and reads the run
// back with GET /v1/runs/{id}. The turn runs a command that calls the model
// itself with the agent's placeholder, which the agent's own report leaves
// out (as a hostile agent would): usage says less than the provider
// counted, and meteredUsage is exactly the provider's count.
func TestMeteredUsageEndToEnd(t *testing.T) {
	setup, _ := engineSetup(t, events.EngineClaudeCode)
	prov := &provider{next: fakellm.New(fakellm.Config{})}
	srv := httptest.NewServer(prov)
	defer srv.Close()
	setup.LLMBaseURL = srv.URL
	dir := t.TempDir()
	getenv := func(k string) string {
		switch k {
		case "CLOPEN_LLM_BASE_URL":
			return srv.URL
		case engines.EnvSandbox:
			return "bwrap"
		}
		return os.Getenv(k)
	}
	var err error
	setup.Sandbox, err = engines.Sandboxing(context.Background(), getenv, filepath.Join(dir, "run"), nil)
	if errors.Is(err, engines.ErrNoSandbox) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if setup.ModelProxies() == nil {
		t.Fatal("a confined setup without model proxies")
	}
	t.Cleanup(setup.ModelProxies().Close)
	h := start(t, Config{Dir: dir, Engines: setup})
	h.waitEngine(events.EngineClaudeCode, engines.ClaudeCodeVersion)
	a := h.account("metered")
	ctx := context.Background()
	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Engine: events.EngineClaudeCode, Model: "claude-opus-5-5"})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := prov.usage()
	behind := `curl -sS -o /dev/null -w '%{http_code}' -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' ` +
		`"$ANTHROPIC_BASE_URL/v1/messages" -d '{"model":"claude-haiku-4-5","max_tokens":50,"messages":[{"role":"user","content":"spend tokens the agent does not report"}]}'`
	sent, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "@@SH:" + base64.RawURLEncoding.EncodeToString([]byte(behind)) + "@@ Run it."})
	if err != nil {
		t.Fatal(err)
	}
	var run events.Run
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if run, err = a.c.Run(ctx, sent.RunID); err == nil && run.State.Terminal() {
			break
		}
	}
	if run.State != events.RunCompleted {
		t.Fatalf("run %s: %s (%s), want completed", sent.RunID, run.State, run.Error)
	}
	after, calls := prov.usage()
	want := events.TokenUsage{InputTokens: after.InputTokens - before.InputTokens, OutputTokens: after.OutputTokens - before.OutputTokens,
		CacheCreationInputTokens: after.CacheCreationInputTokens - before.CacheCreationInputTokens,
		CacheReadInputTokens:     after.CacheReadInputTokens - before.CacheReadInputTokens}
	t.Logf("provider: %+v over %d responses; agent reported %+v; metered %+v", want, calls, run.Usage, run.MeteredUsage)
	if run.MeteredUsage == nil || *run.MeteredUsage != want || want.InputTokens == 0 {
		t.Errorf("GET /v1/runs/%s: meteredUsage %+v, the provider reported %+v", sent.RunID, run.MeteredUsage, want)
	}
	if run.Usage == nil || run.Usage.InputTokens >= want.InputTokens {
		t.Errorf("the agent reported %+v of the provider's %+v: the call behind its back did not happen, or it counted it", run.Usage, want)
	}
	raw := rawRun(t, h.st.URL, a.key, sent.RunID)
	if !strings.Contains(raw, `"meteredUsage":{`) {
		t.Errorf("GET /v1/runs/%s = %s, want meteredUsage in it", sent.RunID, raw)
	}
}

// rawRun is the body of GET /v1/runs/{id}.
func rawRun(t *testing.T, base, key, id string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/runs/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return b.String()
}
