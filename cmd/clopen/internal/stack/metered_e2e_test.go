package stack

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
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
	// mark, when set, counts the requests whose body holds it apart (marked).
	mark   string
	mu     sync.Mutex
	used   events.TokenUsage
	n      int
	marked int
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &recorder{ResponseWriter: w}
	p.next.ServeHTTP(rec, r)
	u := anthropicUsage(rec.body.Bytes())
	p.mu.Lock()
	p.used = p.used.Add(u)
	if u != (events.TokenUsage{}) {
		p.n++
	}
	if p.mark != "" && bytes.Contains(body, []byte(p.mark)) {
		p.marked++
	}
	p.mu.Unlock()
}

// markedCalls is how many requests held the mark.
func (p *provider) markedCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.marked
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
	prov := &provider{next: fakellm.New(fakellm.Config{})}
	h := startConfinedClaude(t, prov)
	a := h.account("metered")
	ctx := context.Background()
	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Engine: events.EngineClaudeCode, Model: "claude-opus-5-5"})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := prov.usage()
	behind := `curl -sS -o /dev/null -w '%{http_code}' -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' ` +
		`"$ANTHROPIC_BASE_URL/v1/messages" -d '{"model":"claude-haiku-4-5","max_tokens":50,"messages":[{"role":"user","content":"spend tokens the agent does not report"}]}'`
	sent, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: shellPrompt(behind) + " Run it."})
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

// shellPrompt is a prompt that makes fakellm have the agent run command.
func shellPrompt(command string) string {
	return "@@SH:" + base64.RawURLEncoding.EncodeToString([]byte(command)) + "@@"
}

// confine makes setup's agents run confined (bubblewrap), with their
// bridges and proxies under dir, pointed at setup.LLMBaseURL.
func confine(t *testing.T, setup *engines.Setup, dir string) {
	t.Helper()
	getenv := func(k string) string {
		switch k {
		case "CLOPEN_LLM_BASE_URL":
			return setup.LLMBaseURL
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
	if setup.ModelProxies() == nil || setup.MCPProxy().Endpoint() == nil {
		t.Fatal("a confined setup without model proxies or the MCP proxy's socket")
	}
	t.Cleanup(setup.ModelProxies().Close)
}

// startConfinedClaude starts a stack whose worker runs Claude Code
// confined (bubblewrap), its model calls going through the model proxy to
// prov (which serves fakellm behind a recorder).
func startConfinedClaude(t *testing.T, prov *provider) *harness {
	return startConfined(t, prov, events.EngineClaudeCode)
}

// startConfined starts a stack whose worker runs the engine typ confined,
// its model calls going through the model proxy to prov.
func startConfined(t *testing.T, prov http.Handler, typ events.EngineType) *harness {
	t.Helper()
	setup, _ := engineSetup(t, typ)
	srv := httptest.NewServer(prov)
	t.Cleanup(srv.Close)
	setup.LLMBaseURL = srv.URL
	dir := t.TempDir()
	confine(t, setup, dir)
	h := start(t, Config{Dir: dir, Engines: setup})
	spec, _ := engines.Lookup(typ)
	h.waitEngine(typ, spec.Version)
	return h
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
