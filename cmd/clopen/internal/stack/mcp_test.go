package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
)

// bearer sets an Authorization header on every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPNotifyAndRunBinding: with a scripted run parked on a question
// (so it is live), a call of the bridge's notify with the run's mcp token
// reaches the session's members as a notification. The run's worker serves
// the bridge's requests only for its tenant and run; once the run has
// ended, the same (unexpired) token is refused.
func TestMCPNotifyAndRunBinding(t *testing.T) {
	h := start(t, Config{})
	tn, other := newTenant(), newTenant()
	s, r, toolUse, feed := h.parkOnQuestion(tn)
	token := bustokentest.Sign(t, h.st.Keys, bustoken.MCP, bustoken.Claims{TenantID: tn.TenantID, ProjectID: tn.project,
		SessionID: s.ID, RunID: r.RunID, Engine: string(events.EngineScripted)})
	connect := func(token string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.st.MCPURL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer(token)}, MaxRetries: -1}, nil)
	}
	cs, err := connect(token)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "notify",
		Arguments: map[string]any{"title": "Build done", "message": "all green", "level": "warning"}})
	if err != nil || res.IsError {
		t.Fatalf("notify = %+v, %v", res, err)
	}
	feed.waitFor(t, 10*time.Second, func(ev events.ChatEvent) bool {
		n, ok := ev.Data.(events.ChatNotification)
		return ok && n.Title == "Build done" && n.Message == "all green" && n.Level == events.LevelWarning
	})

	// The worker, asked as the bridge, serves only the run's own tenant
	// and run: another tenant naming the run is told it is not running.
	nc, err := h.st.Connect(busauth.Bridge, "test-bridge")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for name, req := range map[string]events.RunToolRequest{
		"another tenant":      {Tenant: other.TenantID, RunID: r.RunID, Title: "x"},
		"another run in body": {Tenant: tn.TenantID, RunID: "r-other", Title: "x"},
	} {
		subject, _ := events.ControlSubject(r.RunID, events.VerbNotify)
		body, _ := json.Marshal(req)
		msg, err := nc.Request(subject, body, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var rep events.RunToolReply
		if json.Unmarshal(msg.Data, &rep) != nil || !strings.Contains(rep.Error, "not running") {
			t.Errorf("%s: the worker answered %s, want not running", name, msg.Data)
		}
	}

	answers := map[string]string{"Which database should the service use?": "SQLite"}
	var rep events.ControlReply
	h.must(events.OpAnswer, events.AnswerRequest{Caller: tn.Caller, SessionID: s.ID, ToolUseID: toolUse, Answers: answers}, &rep)
	h.waitRunState(tn, r.RunID, events.RunCompleted)
	// The lease goes a moment after the terminal event.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "notify", Arguments: map[string]any{"title": "late"}})
		if err != nil {
			if !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
				t.Errorf("a call after the run ended failed with %v, want 401", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a call after the run ended was served: %+v", res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
