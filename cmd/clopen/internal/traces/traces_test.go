// Package traces checks the one trace a turn makes, from the client's
// request to the tool calls, as an OTLP receiver gets it. It is a package
// of its own because OpenTelemetry's providers are process globals.
package traces

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"clopen.dev/cmd/clopen/internal/stack"
	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/pkg/platform/telemetry"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// A turn posted with a traceparent is one connected tree under the
// client's span: the gateway's HTTP span, its call to streammgr and
// streammgr's serving of it and its queries, the worker's invoke_agent span with the GenAI
// attributes, a chat span per model answer and an execute_tool span per
// tool call. A failed run's span has error status and error.type.
func TestATurnIsOneTrace(t *testing.T) {
	spans := &receiver{}
	otlp := httptest.NewServer(spans)
	defer otlp.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, "clopen-test", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	wc := worker.DefaultConfig()
	wc.Workspaces = dir
	st, err := stack.Start(ctx, stack.Config{Dir: dir, NATSPort: -1, DatabaseURL: pgtest.NewURL(t), Worker: wc})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Stop() }()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := st.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	key, err := gateway.EnsureDevAccount(ctx, st.DB, filepath.Join(dir, gateway.DevKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(st.URL, key)
	projects, err := c.Projects(rctx)
	if err != nil || len(projects) == 0 {
		t.Fatalf("projects = %v, %v", projects, err)
	}

	const okTrace, okParent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	const failTrace, failParent = "5bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902b8"
	okRun := postTurn(t, c, st.URL, key, projects[0].ID, "tools", okTrace, okParent)
	failRun := postTurn(t, c, st.URL, key, projects[0].ID, "error", failTrace, failParent)
	if err := tel.Shutdown(ctx); err != nil { // flushes every span
		t.Fatal(err)
	}

	tree := spans.trace(okTrace)
	names := map[string]int{}
	for _, s := range tree {
		names[s.GetName()]++
	}
	t.Logf("trace of a tools turn: %v", names)
	root := connected(t, tree, okParent)
	if !strings.Contains(root.GetName(), "/v1/sessions/{id}/messages") {
		t.Errorf("the client's span's child is %q, want the gateway's POST /v1/sessions/{id}/messages", root.GetName())
	}
	for _, want := range []string{"svc.streammgr.start", "INSERT", "invoke_agent scripted", "execute_tool Bash", "execute_tool Read"} {
		if names[want] == 0 {
			t.Errorf("no %q span in the turn's trace", want)
		}
	}
	if names["svc.streammgr.start"] < 2 {
		t.Errorf("svc.streammgr.start spans = %d, want the gateway's call and streammgr's serving", names["svc.streammgr.start"])
	}
	if names["chat scripted/tools"] < 2 {
		t.Errorf("chat spans = %d, want one per model answer (before and after the tools)", names["chat scripted/tools"])
	}
	agent := only(t, tree, "invoke_agent scripted")
	attrs := attributes(agent)
	for k, want := range map[string]string{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "scripted", "gen_ai.provider.name": "clopen.scripted",
		"gen_ai.request.model": "scripted/tools", "clopen.run_id": okRun,
		"gen_ai.usage.input_tokens": "2100", "gen_ai.usage.output_tokens": "85",
	} {
		if attrs[k] != want {
			t.Errorf("invoke_agent %s = %q, want %q", k, attrs[k], want)
		}
	}
	if agent.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("a completed run's span has error status: %v", agent.GetStatus())
	}
	if a := attributes(only(t, tree, "execute_tool Bash")); a["gen_ai.tool.name"] != "Bash" || a["gen_ai.tool.call.id"] == "" {
		t.Errorf("execute_tool attributes = %v", a)
	}

	failed := spans.trace(failTrace)
	connected(t, failed, failParent)
	agent = only(t, failed, "invoke_agent scripted")
	if agent.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || attributes(agent)["error.type"] != string(events.KindProvider) {
		t.Errorf("failed run %s: status %v, error.type %q; want error status and %s", failRun, agent.GetStatus(), attributes(agent)["error.type"], events.KindProvider)
	}
}

// postTurn sends a turn of the scripted scenario in a new session under the
// client span traceparent names, and waits for it to end.
func postTurn(t *testing.T, c *client.Client, base, key, project, scenario, traceID, parent string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := c.CreateSession(ctx, project, api.CreateSession{Engine: events.EngineScripted, Model: "scripted/" + scenario})
	if err != nil {
		t.Fatal(err)
	}
	body := strings.NewReader(`{"text":"go"}`)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/sessions/"+s.ID+"/messages", body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", fmt.Sprintf("00-%s-%s-01", traceID, parent))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var reply events.StartTurnReply
	if resp.StatusCode/100 != 2 || json.Unmarshal(b, &reply) != nil {
		t.Fatalf("send: %d %s", resp.StatusCode, b)
	}
	for {
		r, err := c.Run(ctx, reply.RunID)
		if err == nil && r.State.Terminal() {
			return reply.RunID
		}
		if ctx.Err() != nil {
			t.Fatalf("run %s did not end", reply.RunID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// connected checks that every span of tree descends from parent (the
// client's span, which is not in it) and returns the one whose parent it
// is.
func connected(t *testing.T, tree []*tracepb.Span, parent string) *tracepb.Span {
	t.Helper()
	if len(tree) == 0 {
		t.Fatal("no spans in the trace")
	}
	ids := map[string]*tracepb.Span{}
	for _, s := range tree {
		ids[hex.EncodeToString(s.GetSpanId())] = s
	}
	var roots []*tracepb.Span
	for _, s := range tree {
		p := hex.EncodeToString(s.GetParentSpanId())
		switch {
		case p == parent:
			roots = append(roots, s)
		case ids[p] == nil:
			t.Errorf("span %q has parent %s, which is neither in the trace nor the client's span", s.GetName(), p)
		}
	}
	if len(roots) != 1 {
		t.Fatalf("%d spans are children of the client's span, want 1 (the gateway's)", len(roots))
	}
	return roots[0]
}

func only(t *testing.T, tree []*tracepb.Span, name string) *tracepb.Span {
	t.Helper()
	var found []*tracepb.Span
	for _, s := range tree {
		if s.GetName() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(found), name)
	}
	return found[0]
}

// attributes are a span's attributes as strings.
func attributes(s *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, kv := range s.GetAttributes() {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			out[kv.GetKey()] = v.GetStringValue()
		default:
			out[kv.GetKey()] = fmt.Sprint(v.GetIntValue())
		}
	}
	return out
}

// receiver is an OTLP/HTTP trace receiver keeping every span it gets.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "want an OTLP protobuf trace export", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			rc.spans = append(rc.spans, ss.GetSpans()...)
		}
	}
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// trace returns the spans of one trace id.
func (rc *receiver) trace(id string) []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rc.spans {
		if hex.EncodeToString(s.GetTraceId()) == id {
			out = append(out, s)
		}
	}
	return out
}
