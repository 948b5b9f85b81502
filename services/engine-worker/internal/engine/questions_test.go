package engine

import (
	"context"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
)

func askMessage(id string) events.AssistantMessage {
	return events.AssistantMessage{Content: []events.Block{events.ToolUseBlock{ID: id, Name: string(events.ToolAskUserQuestion)}}}
}

func resultMessage(id string) events.UserMessage {
	return events.UserMessage{Content: []events.Block{events.ToolResultBlock{ToolUseID: id, Content: "done"}}}
}

func TestQuestionsAnswerRules(t *testing.T) {
	answer := Reply{Answers: map[string]string{"q": "a"}}
	allow := Reply{Decision: events.DecisionAllow}
	tests := []struct {
		name    string
		give    []events.Output // emitted before the answer
		id      string
		reply   Reply
		wantErr string // "" accepted
	}{
		{"question answered once its tool_use is out, before the agent asks", []events.Output{askMessage("t1")}, "t1", answer, ""},
		{"unknown tool use", []events.Output{askMessage("t1")}, "t2", answer, `no question pending for tool use "t2"`},
		{"a question answered with a decision", []events.Output{askMessage("t1")}, "t1", allow, "is a question"},
		{"a question whose result went out unasked", []events.Output{askMessage("t1"), resultMessage("t1")}, "t1", answer, "no question pending"},
		{"another tool's tool_use is no question", []events.Output{events.AssistantMessage{Content: []events.Block{
			events.ToolUseBlock{ID: "t1", Name: string(events.ToolBash)}}}}, "t1", allow, "no question pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Questions
			for _, o := range tt.give {
				q.Saw(o)
			}
			err := q.Answer(tt.id, tt.reply)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Answer = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

// An answer given before the adapter parks is the one Park returns; a
// second answer is refused.
func TestQuestionsKeepAnEarlyAnswer(t *testing.T) {
	var q Questions
	q.Saw(askMessage("t1"))
	if err := q.Answer("t1", Reply{Answers: map[string]string{"q": "early"}}); err != nil {
		t.Fatalf("early answer: %v", err)
	}
	if err := q.Answer("t1", Reply{Answers: map[string]string{"q": "again"}}); err == nil || !strings.Contains(err.Error(), "already answered") {
		t.Errorf("second answer = %v, want already answered", err)
	}
	got, err := q.Park(context.Background(), "t1", false, nil)
	if err != nil || got.Answers["q"] != "early" {
		t.Fatalf("Park = %+v, %v; want the early answer", got, err)
	}
	if err := q.Answer("t1", Reply{Answers: map[string]string{"q": "late"}}); err == nil {
		t.Error("an answer after Park returned was accepted")
	}
}

// A permission prompt is pending once parked (announce runs then), and
// takes only a decision.
func TestQuestionsPermissionPrompt(t *testing.T) {
	var q Questions
	if err := q.Answer("p1", Reply{Decision: events.DecisionAllow}); err == nil {
		t.Fatal("a prompt not yet parked took an answer")
	}
	got, err := q.Park(context.Background(), "p1", true, func() error {
		if err := q.Answer("p1", Reply{Answers: map[string]string{"q": "a"}}); err == nil || !strings.Contains(err.Error(), "permission prompt") {
			t.Errorf("answers to a permission prompt = %v, want refused", err)
		}
		return q.Answer("p1", Reply{Decision: events.DecisionDeny, Message: "no"})
	})
	if err != nil || got.Decision != events.DecisionDeny || got.Message != "no" {
		t.Errorf("Park = %+v, %v; want the deny", got, err)
	}
}

func TestQuestionsParkEndsWithTheContext(t *testing.T) {
	var q Questions
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrCancelled)
	if _, err := q.Park(ctx, "t1", false, nil); err != ErrCancelled {
		t.Errorf("Park = %v, want the cancel cause", err)
	}
}
