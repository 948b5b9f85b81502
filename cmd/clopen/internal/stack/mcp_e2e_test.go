package stack

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// mcpAskEngines are the engines TestMCPAskUser parks through the bridge's
// ask_user: pi and the ACP agents, which have no question tool of their
// own (Gemini CLI gets it as ask_question, saved as ask_user), and Codex
// and Claude Code, which find the tool with their tool search.
var mcpAskEngines = []events.EngineType{events.EnginePi, events.EngineQwen, events.EngineCopilot, events.EngineOpenCode, events.EngineCline, events.EngineCodex, events.EngineClaudeCode, events.EngineGemini}

// TestMCPAskUser: a real agent's turn calls the bridge's ask_user
// (fakellm's @@MCP_ASK@@), through the worker's MCP proxy and the bridge,
// and the run parks: awaiting_input over REST, with the call saved as
// mcp__clopen__ask_user. The answer posted over REST comes back to the
// agent as the tool's result and the turn completes. A second answer to
// the same call is refused.
func TestMCPAskUser(t *testing.T) {
	setup, llm := engineSetup(t, events.EnginePi)
	ready := installedOf(t, setup, mcpAskEngines)
	h := start(t, Config{Dir: t.TempDir(), Engines: setup})
	for _, e := range ready {
		spec, _ := engines.Lookup(e)
		h.waitEngine(e, spec.Version)
	}
	a := h.account("mcpask")
	for _, e := range ready {
		t.Run(string(e), func(t *testing.T) { askThroughBridge(t, a, llm, e) })
	}
}

// TestMCPAskUserConfined: the same for pi confined (bubblewrap), whose
// agent reaches the worker's MCP proxy only at the sandbox's loopback
// port bridged to the proxy's socket.
func TestMCPAskUserConfined(t *testing.T) {
	setup, llm := engineSetup(t, events.EnginePi)
	dir := t.TempDir()
	confine(t, setup, dir)
	h := start(t, Config{Dir: dir, Engines: setup})
	h.waitEngine(events.EnginePi, engines.PiVersion)
	askThroughBridge(t, h.account("mcpconfined"), llm, events.EnginePi)
}

// askThroughBridge runs a turn of engine that asks through the bridge,
// answers it over REST and checks the answer reached the agent.
func askThroughBridge(t *testing.T, a account, llm *fakellm.Server, engine events.EngineType) {
	t.Helper()
	ctx := context.Background()
	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	sent, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "Ask me which option @@MCP_ASK@@"})
	if err != nil {
		t.Fatal(err)
	}
	waitRESTRun(t, a.c, sent.RunID, events.RunAwaitingInput, 3*time.Minute)
	ask := waitToolUse(t, a.c, s.ID, "mcp__clopen__ask_user", 30*time.Second)
	if _, err := a.c.Answer(ctx, s.ID, api.Answer{RunID: sent.RunID, ToolUseID: ask.ID,
		Answers: map[string]string{"Which option?": "Beta"}}); err != nil {
		t.Fatalf("answer: %v", err)
	}
	r := waitRESTRun(t, a.c, sent.RunID, events.RunCompleted, 2*time.Minute)
	if _, err := a.c.Answer(ctx, s.ID, api.Answer{RunID: sent.RunID, ToolUseID: ask.ID,
		Answers: map[string]string{"Which option?": "Alpha"}}); err == nil {
		t.Error("a second answer to the ended run's question was taken")
	}
	// The agent got the answer as the tool's result and sent it to the
	// model, whose last words quote it.
	if !sentToolResult(llm.Requests(), events.MCPAskToolName(engine)) {
		t.Errorf("no model request carried the ask_user result (run %+v)", r)
	}
	if text := assistantText(t, a.c, s.ID); !strings.Contains(text, "Tool finished. Result:") || !strings.Contains(text, "Beta") {
		t.Errorf("the turn's text %q does not quote the answer Beta", text)
	}
}

// sentToolResult reports whether a model request offering a tool named
// *tool carried a tool result.
func sentToolResult(reqs []fakellm.Request, tool string) bool {
	for _, r := range reqs {
		if r.ToolResult && slices.ContainsFunc(r.Tools, func(n string) bool { return strings.HasSuffix(n, tool) }) {
			return true
		}
	}
	return false
}

// assistantText is the text of a session's saved assistant messages.
func assistantText(t *testing.T, c *client.Client, session string) string {
	t.Helper()
	page, err := c.Messages(context.Background(), session, "", 200)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, row := range page.Messages {
		if o, err := events.DecodeOutput(row.Message); err == nil {
			if m, ok := o.(events.AssistantMessage); ok {
				for _, blk := range m.Content {
					if tb, ok := blk.(events.TextBlock); ok {
						b.WriteString(tb.Text + "\n")
					}
				}
			}
		}
	}
	return b.String()
}

// waitToolUse polls a session's saved messages over REST for a tool_use
// named name.
func waitToolUse(t *testing.T, c *client.Client, session, name string, d time.Duration) events.ToolUseBlock {
	t.Helper()
	deadline := time.Now().Add(d)
	var names []string
	for {
		names = names[:0]
		page, err := c.Messages(context.Background(), session, "", 200)
		if err == nil {
			for _, row := range page.Messages {
				o, err := events.DecodeOutput(row.Message)
				if err != nil {
					continue
				}
				m, ok := o.(events.AssistantMessage)
				if !ok {
					continue
				}
				for _, b := range m.Content {
					if tu, ok := b.(events.ToolUseBlock); ok {
						names = append(names, tu.Name)
						if tu.Name == name {
							return tu
						}
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no saved tool_use %s after %s (tool uses: %v, err %v)", name, d, names, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
