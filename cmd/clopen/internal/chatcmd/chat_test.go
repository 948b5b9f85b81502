package chatcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// fakeGateway is the API and the live connection in one, recording what the
// chat asks and letting the test push server frames.
type fakeGateway struct {
	frames chan events.ServerFrame

	mu       sync.Mutex
	created  []api.CreateSession
	joins    []*uint64
	sent     []api.SendMessage
	controls []string
	answers  []api.Answer
}

func newFake() *fakeGateway { return &fakeGateway{frames: make(chan events.ServerFrame, 100)} }

func (f *fakeGateway) Projects(context.Context) ([]api.Project, error) {
	return []api.Project{{ID: "p1", Name: "default"}, {ID: "p2", Name: "other"}}, nil
}

func (f *fakeGateway) Sessions(_ context.Context, project string, _ int) ([]events.Session, error) {
	if project == "p2" {
		return []events.Session{{ID: "s-new", Title: "newest"}, {ID: "s-old", Title: "older"}}, nil
	}
	return nil, nil
}

func (f *fakeGateway) CreateSession(_ context.Context, _ string, in api.CreateSession) (events.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, in)
	return events.Session{ID: "s1", Title: in.Title, ProjectID: "p1"}, nil
}

func (f *fakeGateway) Join(_ context.Context, session string, cursor *uint64) (api.Joined, error) {
	f.mu.Lock()
	f.joins = append(f.joins, cursor)
	f.mu.Unlock()
	f.frames <- events.ServerFrame{Type: events.WSFrameSnapshot, Session: session, Cursor: 10,
		Payload: &events.Snapshot{Session: events.Session{ID: session}, Cursor: 10}}
	return api.Joined{Session: session, From: 11}, nil
}

func (f *fakeGateway) Send(_ context.Context, _ string, m api.SendMessage) (events.StartTurnReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, m)
	return events.StartTurnReply{RunID: "r" + string(rune('0'+len(f.sent)))}, nil
}

func (f *fakeGateway) control(op string) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.controls = append(f.controls, op)
	return json.RawMessage(`{"accepted":true}`), nil
}

func (f *fakeGateway) Cancel(context.Context, string, string) (json.RawMessage, error) {
	return f.control("cancel")
}

func (f *fakeGateway) Interrupt(context.Context, string, string) (json.RawMessage, error) {
	return f.control("interrupt")
}

func (f *fakeGateway) Answer(_ context.Context, _ string, a api.Answer) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, a)
	return json.RawMessage(`{"accepted":true}`), nil
}

func (f *fakeGateway) Frames() <-chan events.ServerFrame { return f.frames }
func (f *fakeGateway) Close() error                      { return nil }

func (f *fakeGateway) snapshot() (sent []api.SendMessage, controls []string, answers []api.Answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(sent, f.sent...), append(controls, f.controls...), append(answers, f.answers...)
}

// push sends chat events of run r1 in session s1 with rising cursors.
func (f *fakeGateway) push(t *testing.T, run string, data ...events.ChatData) {
	t.Helper()
	for _, d := range data {
		ev := events.ChatEvent{Type: d.ChatType(), ChatSessionID: "s1", RunID: run, Timestamp: time.Now().UTC(), Data: d}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		f.frames <- events.ServerFrame{Type: events.WSFrameEvent, Session: "s1", Cursor: 11, Event: b}
	}
}

// syncBuffer is the chat's output, safe to poll.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the output contains want.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output never contained %q:\n%s", want, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rows numbers the fake messages: every saved message has its own row.
var rows atomic.Int64

func nextRow() string { return fmt.Sprint("row-", rows.Add(1)) }

func assistant(blocks ...events.Block) events.ChatMessage {
	return events.ChatMessage{Message: events.AssistantMessage{MessageBase: events.MessageBase{CreatedAt: time.Now().UTC(), MessageID: "m"},
		Content: blocks}, MessageRowID: nextRow()}
}

func toolResult(id, content string) events.ChatMessage {
	return events.ChatMessage{Message: events.UserMessage{MessageBase: events.MessageBase{CreatedAt: time.Now().UTC(), MessageID: "u"},
		Synthetic: true, Content: []events.Block{events.ToolResultBlock{ToolUseID: id, Content: content}}}, MessageRowID: nextRow()}
}

func TestChatTurns(t *testing.T) {
	fg := newFake()
	inR, inW := io.Pipe()
	out := &syncBuffer{}
	interrupts := make(chan struct{})
	done := make(chan error, 1)
	clk := &clock{} // still: the two Ctrl-Cs below are always within two seconds
	go func() {
		done <- newChat(fg, func(context.Context) (Conn, error) { return fg, nil },
			Options{Engine: "scripted", Model: "scripted/hello"}, out, clk.now).run(context.Background(), inR, interrupts)
	}()
	waitFor(t, out, "> ")

	// A streamed answer with a tool call; the saved text is not shown twice,
	// nor again when the message is re-sent with a backfilled stop reason.
	io.WriteString(inW, "hello\n")
	waitForSent(t, fg, 1)
	answer := assistant(events.TextBlock{Text: "Hi there"})
	fg.push(t, "r1",
		events.ChatRunState{State: events.RunRunning},
		events.ChatPartial{EventType: events.PartialStart},
		events.ChatPartial{EventType: events.PartialUpdate, DeltaText: "Hi "},
		events.ChatPartial{EventType: events.PartialUpdate, DeltaText: "there"},
		events.ChatPartial{EventType: events.PartialEnd},
		answer,
		assistant(events.ToolUseBlock{ID: "t0", Name: "Bash", Input: json.RawMessage(`{"command":"ls -la"}`)}),
		answer,
		toolResult("t0", "a.go\nb.go\n"),
		events.ChatNotification{Level: events.NotificationLevel("info"), Title: "Heads up", Message: "hi"},
		events.ChatRunState{State: events.RunCompleted},
	)
	waitFor(t, out, "⎿ a.go …")
	waitFor(t, out, "[info] Heads up: hi")
	if strings.Count(out.String(), "Hi there") != 1 || !strings.Contains(out.String(), "⏺ Bash(ls -la)") {
		t.Errorf("output:\n%s", out.String())
	}

	// A question: options shown, a number picks one.
	io.WriteString(inW, "ask me\n")
	waitForSent(t, fg, 2) // the prompt is sent before the question arrives, as with a real run
	q := events.AskUserQuestionInput{Questions: []events.Question{{Question: "Which database?", Options: []events.QuestionOption{
		{Label: "Postgres", Description: "relational"}, {Label: "SQLite"}}}}}
	qin, _ := json.Marshal(q)
	fg.push(t, "r2",
		assistant(events.ToolUseBlock{ID: "t1", Name: "AskUserQuestion", Input: qin}),
		events.ChatRunState{State: events.RunAwaitingInput, Reason: "question", ToolUseID: "t1"},
	)
	waitFor(t, out, "2. SQLite")
	io.WriteString(inW, "2\n")
	waitForAnswers(t, fg, 1) // the run stays parked until answered: nothing comes before

	// A permission prompt.
	fg.push(t, "r2",
		assistant(events.ToolUseBlock{ID: "t2", Name: "Bash", Input: json.RawMessage(`{"command":"go test ./..."}`)}),
		events.ChatRunState{State: events.RunAwaitingInput, Reason: "permission", ToolUseID: "t2"},
	)
	waitFor(t, out, "Allow Bash(go test ./...)? [y/N]")
	io.WriteString(inW, "y\n")
	waitForAnswers(t, fg, 2)
	fg.push(t, "r2", events.ChatRunState{State: events.RunCompleted})

	// Ctrl-C during a turn interrupts, a second one cancels.
	io.WriteString(inW, "long\n")
	fg.push(t, "r3", events.ChatRunState{State: events.RunRunning})
	waitForSent(t, fg, 3)
	interrupts <- struct{}{}
	waitFor(t, out, "[interrupting")
	interrupts <- struct{}{}
	waitFor(t, out, "[cancelling]")
	fg.push(t, "r3", events.ChatRunState{State: events.RunCancelling}, events.ChatCancelled{},
		events.ChatRunState{State: events.RunCancelled})
	waitFor(t, out, "[cancelled]")

	// Ctrl-C at the prompt leaves.
	time.Sleep(20 * time.Millisecond)
	interrupts <- struct{}{}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	sent, controls, answers := fg.snapshot()
	if len(sent) != 3 || sent[0].Text != "hello" || sent[0].Model != "" {
		t.Errorf("sent = %+v, want three prompts without a pinned model", sent)
	}
	if strings.Join(controls, ",") != "interrupt,cancel" {
		t.Errorf("controls = %v, want interrupt then cancel", controls)
	}
	if answers[0].ToolUseID != "t1" || answers[0].Answers["Which database?"] != "SQLite" {
		t.Errorf("question answer = %+v", answers[0])
	}
	if answers[1].ToolUseID != "t2" || answers[1].Decision != "allow" {
		t.Errorf("permission answer = %+v", answers[1])
	}
	fg.mu.Lock()
	defer fg.mu.Unlock()
	if len(fg.created) != 1 || fg.created[0].Model != "scripted/hello" {
		t.Errorf("created sessions = %+v, want one with the scripted model", fg.created)
	}
}

func TestChatPicksTheMostRecentSessionAndReconnects(t *testing.T) {
	fg := newFake()
	out := &syncBuffer{}
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), fg, func(context.Context) (Conn, error) { return fg, nil },
			Options{Project: "other"}, inR, out, nil)
	}()
	waitFor(t, out, `session "newest" (s-new)`)
	fg.frames <- events.ServerFrame{Type: events.WSFrameBye, Reason: "slow consumer", Cursor: 10}
	waitFor(t, out, "[slow consumer; reconnecting]")
	io.WriteString(inW, "/quit\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fg.mu.Lock()
	defer fg.mu.Unlock()
	if len(fg.joins) != 2 || fg.joins[0] != nil || fg.joins[1] == nil || *fg.joins[1] != 10 {
		t.Errorf("joins = %v, want a fresh join then a resume from cursor 10", fg.joins)
	}
	if len(fg.created) != 0 {
		t.Errorf("created a session although one exists")
	}
}

func waitForAnswers(t *testing.T, fg *fakeGateway, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, _, a := fg.snapshot(); len(a) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d answers", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitForSent(t *testing.T, fg *fakeGateway, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if s, _, _ := fg.snapshot(); len(s) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d prompts sent", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// clock is a time that moves only when the test says.
type clock struct{ nanos atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *clock) advance(d time.Duration) { c.nanos.Add(int64(d)) }

// TestSecondCtrlCAfterTheTurnStopped: a second Ctrl-C within two seconds of
// an interrupt cancels the turn while it runs; when the interrupt has
// already ended the turn, it only says so and the chat stays, and the next
// Ctrl-C leaves. Later than two seconds, Ctrl-C at the prompt leaves at once.
func TestSecondCtrlCAfterTheTurnStopped(t *testing.T) {
	tests := []struct {
		name        string
		wait        time.Duration // between the interrupt and the next Ctrl-C
		wantStay    bool          // the next Ctrl-C does not leave
		wantControl string
	}{
		{name: "within two seconds", wait: 1900 * time.Millisecond, wantStay: true, wantControl: "interrupt"},
		{name: "later", wait: 2100 * time.Millisecond, wantStay: false, wantControl: "interrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fg := newFake()
			inR, inW := io.Pipe()
			defer inW.Close()
			out := &syncBuffer{}
			clk := &clock{}
			clk.advance(time.Hour)
			interrupts := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- newChat(fg, func(context.Context) (Conn, error) { return fg, nil }, Options{}, out, clk.now).
					run(context.Background(), inR, interrupts)
			}()
			waitFor(t, out, "> ")
			io.WriteString(inW, "long\n")
			waitForSent(t, fg, 1)
			fg.push(t, "r1", events.ChatRunState{State: events.RunRunning})
			interrupts <- struct{}{}
			waitFor(t, out, "[interrupting")
			// The interrupt ends the turn before the next Ctrl-C.
			fg.push(t, "r1", events.ChatRunState{State: events.RunCompleted},
				events.ChatNotification{Level: "info", Title: "turn over"})
			waitFor(t, out, "[info] turn over")
			clk.advance(tt.wait)
			interrupts <- struct{}{}
			if tt.wantStay {
				waitFor(t, out, "[the turn had already stopped; Ctrl-C again to leave]")
				select {
				case err := <-done:
					t.Fatalf("the chat left (%v) on a second Ctrl-C for a turn that had stopped", err)
				default:
				}
				interrupts <- struct{}{} // the next one leaves
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Ctrl-C at the prompt did not leave")
			}
			if _, controls, _ := fg.snapshot(); strings.Join(controls, ",") != tt.wantControl {
				t.Errorf("controls = %v, want %s", controls, tt.wantControl)
			}
		})
	}
}
