package bridge

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"clopen.dev/pkg/events"
)

// TestInternalToolsAreListed: the tools the bridge serves are exactly
// events.MCPInternalTools, which the engine adapters read to name a call
// whose agent gives only the bare tool name; for Gemini CLI ask_user is
// offered as its alias, which adapters save as ask_user.
func TestInternalToolsAreListed(t *testing.T) {
	for _, engine := range []events.EngineType{events.EngineClaudeCode, events.EngineGemini} {
		askName := events.MCPAskToolName(engine)
		names := listTools(t, (&tools{}).server(askName))
		if !slices.Contains(names, askName) {
			t.Errorf("%s: the bridge serves %v, without %s", engine, names, askName)
		}
		for i, n := range names {
			names[i] = strings.TrimPrefix(events.CanonicalMCPAsk(events.MCPToolPrefix+events.MCPInternalServer+"__"+n), events.MCPToolPrefix+events.MCPInternalServer+"__")
		}
		want := slices.Clone(events.MCPInternalTools)
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("%s: the bridge serves %v (saved as), events.MCPInternalTools says %v", engine, names, want)
		}
	}
	if got := events.MCPAskToolName(events.EngineGemini); got == "ask_user" {
		t.Errorf("Gemini CLI is offered ask_user as %q, a name it hides", got)
	}
}

// listTools lists the tools of s over an in-memory transport.
func listTools(t *testing.T, s *mcp.Server) []string {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}
