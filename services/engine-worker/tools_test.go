package worker

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/services/engine-worker/internal/engine"
)

// TestNextAskSkipsAnsweredCalls: the bridge's ask parks on the agent's
// oldest ask_user call still without a result; a call the bridge refused
// before asking (its result already out) is never parked on.
func TestNextAskSkipsAnsweredCalls(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{ctx: ctx, asks: make(chan string, 16)}
	use := func(id, name string) events.Output {
		return events.AssistantMessage{Content: []events.Block{events.ToolUseBlock{ID: id, Name: name}}}
	}
	r.sawAsks(use("refused", AskToolName))
	r.sawAsks(events.UserMessage{Content: []events.Block{events.ToolResultBlock{ToolUseID: "refused"}}})
	r.sawAsks(use("bash", "Bash"))
	r.sawAsks(use("asked", AskToolName))
	if id, err := r.nextAsk(); err != nil || id != "asked" {
		t.Errorf("nextAsk = %q, %v; want the call without a result", id, err)
	}
	cancel()
	if id, err := r.nextAsk(); err == nil {
		t.Errorf("nextAsk after the run ended = %q", id)
	}
}

// TestAskFromBridge: the bridge's ask parks the run on the agent's call
// (awaiting_input with its tool-use id) and returns the user's answers; a
// question left unanswered past the wait fails the call saying so, and the
// run is running again.
func TestAskFromBridge(t *testing.T) {
	ctx := context.Background()
	_, js := natstest.Connect(t, natstest.Start(t))
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.StreamEvents, Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	var fenced atomic.Bool
	pub, err := newPublisher(js, events.Envelope{Tenant: "t1", Run: "r1", Epoch: 1}, 0, &fenced)
	if err != nil {
		t.Fatal(err)
	}
	r := &run{ctx: ctx, asks: make(chan string, 16), pub: pub, state: events.RunRunning}
	questions := []events.Question{{Question: "Which option?"}}
	r.sawAsks(events.AssistantMessage{Content: []events.Block{events.ToolUseBlock{ID: "call-1", Name: AskToolName}}})
	go func() {
		for r.currentState() != events.RunAwaitingInput {
			time.Sleep(5 * time.Millisecond)
		}
		if err := r.questions.Answer("call-1", engine.Reply{Answers: map[string]string{"Which option?": "Beta"}}); err != nil {
			t.Errorf("answer: %v", err)
		}
	}()
	answers, err := r.askFromBridge(questions, time.Minute)
	if err != nil || answers["Which option?"] != "Beta" {
		t.Fatalf("askFromBridge = %v, %v; want the answer Beta", answers, err)
	}

	r.sawAsks(events.AssistantMessage{Content: []events.Block{events.ToolUseBlock{ID: "call-2", Name: AskToolName}}})
	_, err = r.askFromBridge(questions, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not answer within") {
		t.Errorf("an unanswered question: %v, want a timeout saying so", err)
	}
	if s := r.currentState(); s != events.RunRunning {
		t.Errorf("after the unanswered question the run is %s, want running", s)
	}
	if err := r.questions.Answer("call-2", engine.Reply{Answers: map[string]string{"Which option?": "late"}}); err == nil {
		t.Error("an answer after the wait was taken")
	}
}
