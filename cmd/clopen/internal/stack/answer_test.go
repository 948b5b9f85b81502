package stack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// askThenPermit asks a question, taking a second between showing it and
// parking on it (as a real agent takes a moment between its tool_use and
// its question), then asks permission for a tool call.
const askThenPermit = `{"name": "ask-then-permit", "steps": [
  {"ask": {"delay": "1s", "questions": [{"question": "Which database?", "header": "Database", "multiSelect": false,
    "options": [{"label": "Postgres", "description": ""}, {"label": "SQLite", "description": ""}]}]}},
  {"permission": {"name": "Bash", "input": {"command": "ls"}, "result": "README.md"}},
  {"text": {"text": "Done."}}
]}`

// TestAnswerAtOnceUponWaitingInput answers every question and permission
// prompt the moment chat:waiting-input reaches the client over the
// WebSocket, through REST: each answer is taken, and the turn completes.
func TestAnswerAtOnceUponWaitingInput(t *testing.T) {
	dir := t.TempDir()
	cfg := withScenarios(t, dir, map[string]string{"ask-then-permit": askThenPermit})
	h := start(t, Config{Dir: dir, Worker: cfg})
	ctx := context.Background()
	a := h.account("answers")
	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Model: "scripted/ask-then-permit"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := a.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.Join(ctx, s.ID, nil); err != nil {
		t.Fatal(err)
	}
	reply, err := ws.Send(ctx, s.ID, api.SendMessage{Text: "set it up"})
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]string{} // tool use id -> tool name, from the messages
	var answered []string
	var refused []string
	all := frames(t, ws, 60*time.Second, func(f events.ServerFrame, ev events.ChatEvent) bool {
		switch d := ev.Data.(type) {
		case events.ChatMessage:
			if m, ok := d.Message.(events.AssistantMessage); ok {
				for _, b := range m.Content {
					if tu, ok := b.(events.ToolUseBlock); ok {
						tools[tu.ID] = tu.Name
					}
				}
			}
		case events.ChatWaitingInput:
			in := api.Answer{RunID: reply.RunID, ToolUseID: d.ToolUseID, Decision: events.DecisionAllow}
			if tools[d.ToolUseID] == string(events.ToolAskUserQuestion) {
				in = api.Answer{RunID: reply.RunID, ToolUseID: d.ToolUseID, Answers: map[string]string{"Which database?": "SQLite"}}
			}
			if _, err := a.c.Answer(ctx, s.ID, in); err != nil {
				refused = append(refused, fmt.Sprintf("%s %s: %v", tools[d.ToolUseID], d.ToolUseID, err))
			} else {
				answered = append(answered, tools[d.ToolUseID])
			}
			if len(refused) > 0 {
				return true // a refused answer leaves the run blocked
			}
		}
		return f.Cursor > 0 && ev.Type == events.ChatTypeStreamFinished && ev.RunID == reply.RunID
	})
	if len(refused) > 0 {
		t.Fatalf("an answer given as soon as chat:waiting-input arrived was refused: %v", refused)
	}
	if want := []string{string(events.ToolAskUserQuestion), string(events.ToolBash)}; fmt.Sprint(answered) != fmt.Sprint(want) {
		t.Errorf("answered %v, want %v", answered, want)
	}
	var sawAnswer, completed bool
	for _, f := range all {
		ev, _ := events.DecodeChatEvent(f.Event)
		if m, ok := ev.Data.(events.ChatMessage); ok {
			if u, ok := m.Message.(events.UserMessage); ok && strings.Contains(fmt.Sprint(u.Content), "SQLite") {
				sawAnswer = true
			}
		}
		if fin, ok := ev.Data.(events.ChatStreamFinished); ok && fin.Status == events.FinishCompleted {
			completed = true
		}
	}
	if !sawAnswer || !completed {
		t.Errorf("the turn did not carry the answer to completion (answer in a tool result: %v, completed: %v)", sawAnswer, completed)
	}
}
