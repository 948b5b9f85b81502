package router

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func testRun() Run {
	return Run{ID: "run-1", Tenant: "ten", SessionID: "sess", ProjectID: "proj", Engine: events.EngineScripted,
		ModelName: "Hello", AccountID: "acct", AccountName: "Work", Effort: "high", State: events.RunQueued,
		Epoch: 0, LastSeq: 1, Head: "user-row"}
}

// feed routes outputs as one worker (epoch 3) would publish them.
func feed(s *State, outs ...events.Output) []Outcome {
	var res []Outcome
	for _, o := range outs {
		seq := s.run.LastSeq + 1
		if s.run.Epoch != 3 {
			seq = 1
		}
		res = append(res, s.Route(events.Envelope{Tenant: "ten", Run: "run-1", Session: "sess", Epoch: 3, Seq: seq,
			EmittedAt: t0.Add(time.Duration(seq) * time.Millisecond), Output: o}))
	}
	return res
}

func chatTypes(outs []Outcome) string {
	var s []string
	for _, o := range outs {
		for _, ev := range o.Chat {
			t := string(ev.Type)
			switch d := ev.Data.(type) {
			case events.ChatPartial:
				t += ":" + string(d.EventType)
			case events.ChatRunState:
				t += ":" + string(d.State)
			case events.ChatMessage:
				t += ":" + d.Message.OutputType()
			}
			s = append(s, t)
		}
	}
	return strings.Join(s, " ")
}

func text(s string) events.AssistantMessage {
	return events.AssistantMessage{MessageBase: events.MessageBase{MessageID: "m-" + s, SessionID: "eng-1",
		Engine: events.MessageEngine{Type: events.EngineScripted}}, Content: []events.Block{events.TextBlock{Text: s}}}
}

func toolUse(id, name string) events.AssistantMessage {
	return events.AssistantMessage{MessageBase: events.MessageBase{MessageID: "m-" + id, SessionID: "eng-1"},
		StopReason: events.StopToolUse, Content: []events.Block{events.ToolUseBlock{ID: id, Name: name, Input: json.RawMessage(`{}`)}}}
}

func toolResult(id string) events.UserMessage {
	return events.UserMessage{MessageBase: events.MessageBase{MessageID: "r-" + id, SessionID: "eng-1"}, Synthetic: true,
		Content: []events.Block{events.ToolResultBlock{ToolUseID: id, Content: "ok"}}}
}

func delta(s string) events.StreamEvent {
	return events.StreamEvent{Event: events.StreamDelta, SessionID: "eng-1", Text: s}
}

var (
	claimed   = events.RunState{State: events.RunClaimed, Reason: "worker-a"}
	running   = events.RunState{State: events.RunRunning}
	startText = events.StreamEvent{Event: events.StreamStart, SessionID: "eng-1"}
	stopText  = events.StreamEvent{Event: events.StreamStop, SessionID: "eng-1"}
	success   = events.Result{Subtype: events.ResultSuccess, SessionID: "eng-1", NumTurns: 1, StopReason: "end_turn",
		Usage: events.TokenUsage{InputTokens: 10, OutputTokens: 5}, TotalCostUSD: 0.01}
	completed = events.RunState{State: events.RunCompleted}
)

func TestRouteATurn(t *testing.T) {
	s := New(testRun(), nil)
	outs := feed(s, claimed, running, startText, delta("Hel"), delta("lo"), stopText, text("Hello"), success, completed)
	want := "chat:run-state:claimed chat:run-state:running chat:partial:start chat:partial:update chat:partial:update " +
		"chat:partial:end chat:message:assistant chat:complete chat:run-state:completed chat:stream-finished"
	if got := chatTypes(outs); got != want {
		t.Errorf("chat events:\n got %s\nwant %s", got, want)
	}
	// The saved message hangs off the user's message, is stamped with the
	// run's account, model name and effort, and becomes HEAD.
	saved := outs[6]
	if len(saved.Inserts) != 1 || saved.Inserts[0].ParentRowID != "user-row" || saved.Session.Head != saved.Inserts[0].RowID {
		t.Fatalf("insert = %+v, session = %+v", saved.Inserts, saved.Session)
	}
	m := saved.Inserts[0].Output.(events.AssistantMessage)
	if m.Engine.Account != (events.AccountRef{ID: "acct", Name: "Work"}) || m.Engine.Model.Name != "Hello" || m.Engine.ReasoningEffort != "high" {
		t.Errorf("message engine = %+v", m.Engine)
	}
	// The success's stop reason is written back into the null one (the row
	// only: chat:complete carries it to clients).
	res := outs[7]
	if len(res.Updates) != 1 || res.Updates[0].Output.(events.AssistantMessage).StopReason != events.StopEndTurn {
		t.Errorf("stop reason backfill = %+v", res.Updates)
	}
	if res.Run.Usage == nil || res.Run.Usage.InputTokens != 10 || *res.Run.CostUSD != 0.01 {
		t.Errorf("run usage = %+v", res.Run)
	}
	end := outs[8]
	if end.Terminal != events.RunCompleted || !end.Session.ClearActive || len(end.Notify) != 1 {
		t.Errorf("terminal outcome = %+v", end)
	}
	if c := end.Chat[0].Data.(events.ChatComplete); c.Usage == nil || c.StopReason != "end_turn" || c.NumTurns != 1 {
		t.Errorf("chat:complete = %+v", c)
	}
	if outs[0].Run.WorkerID != "worker-a" || !outs[0].Run.Claimed {
		t.Errorf("claim = %+v", outs[0].Run)
	}
	if outs[2].Run.EngineSession != "eng-1" || outs[3].Run.EngineSession != "" {
		t.Errorf("engine session recorded %q then %q; want once", outs[2].Run.EngineSession, outs[3].Run.EngineSession)
	}
}

func TestPartialFramesCarryDeltasOnly(t *testing.T) {
	s := New(testRun(), nil)
	outs := feed(s, startText, delta("one "), delta("two"))
	if d := outs[2].Chat[0].Data.(events.ChatPartial); d.DeltaText != "two" {
		t.Errorf("second update = %q, want the delta alone", d.DeltaText)
	}
	if got, _ := s.Partial(); got != "one two" {
		t.Errorf("partial so far = %q", got)
	}
}

func TestConsecutiveDuplicateAssistantTextIsSavedOnce(t *testing.T) {
	s := New(testRun(), nil)
	outs := feed(s, text("same"), text("same"), toolResult("x"), text("same"))
	if n := len(outs[1].Inserts); n != 0 {
		t.Errorf("a repeated assistant text was saved again")
	}
	if n := len(outs[3].Inserts); n != 1 {
		t.Errorf("the same text after a user message must be saved")
	}
}

func TestToolResultsAndChildrenKeepTheDAGAChain(t *testing.T) {
	s := New(testRun(), nil)
	child := text("child")
	child.Parent.ToolUseID = "agent-1"
	outs := feed(s, toolUse("agent-1", "Agent"), child, toolResult("agent-1"))
	prev := "user-row"
	for i, o := range outs {
		if len(o.Inserts) != 1 || o.Inserts[0].ParentRowID != prev {
			t.Fatalf("message %d parent = %+v, want %s", i, o.Inserts, prev)
		}
		prev = o.Inserts[0].RowID
	}
}

func TestAskUserQuestionTellsTheProject(t *testing.T) {
	s := New(testRun(), nil)
	outs := feed(s, toolUse("q1", "AskUserQuestion"))
	if !strings.Contains(chatTypes(outs), "chat:waiting-input") || len(outs[0].Notify) != 1 {
		t.Errorf("AskUserQuestion outcome = %s, notify %d", chatTypes(outs), len(outs[0].Notify))
	}
	w := outs[0].Notify[0].Data.(events.ChatWaitingInput)
	if w.ToolUseID != "q1" || w.ProjectID != "proj" || w.ChatSessionID != "sess" {
		t.Errorf("waiting input = %+v", w)
	}
}

func TestCancelSavesPartialsAndMarksOpenToolCalls(t *testing.T) {
	s := New(testRun(), nil)
	outs := feed(s, toolUse("t1", "Bash"), startText, delta("half an ans"),
		events.RunState{State: events.RunCancelling}, events.RunState{State: events.RunCancelled, Reason: "cancelled by user"})
	end := outs[len(outs)-1]
	if end.Terminal != events.RunCancelled {
		t.Fatalf("terminal = %q", end.Terminal)
	}
	if len(end.Inserts) != 1 {
		t.Fatalf("partial text not saved: %+v", end.Inserts)
	}
	a := end.Inserts[0].Output.(events.AssistantMessage)
	if a.StopReason != events.StopInterrupted || a.SessionID != "" || a.Content[0].(events.TextBlock).Text != "half an ans" {
		t.Errorf("saved partial = %+v", a)
	}
	if len(end.Updates) != 1 || end.Updates[0].Output.(events.AssistantMessage).StopReason != events.StopInterrupted {
		t.Errorf("the unanswered tool call was not marked interrupted: %+v", end.Updates)
	}
	if got := chatTypes([]Outcome{end}); !strings.HasSuffix(got, "chat:cancelled chat:run-state:cancelled chat:stream-finished") {
		t.Errorf("cancel chat events = %s", got)
	}
}

func TestFailedTurnSavesAnErrorMessage(t *testing.T) {
	s := New(testRun(), nil)
	outs := feed(s, events.RunState{State: events.RunFailed, Error: "provider overloaded", ErrorKind: events.KindProvider})
	end := outs[0]
	a := end.Inserts[0].Output.(events.AssistantMessage)
	if got := a.Content[0].(events.TextBlock).Text; got != "**Error:** provider overloaded" {
		t.Errorf("error message = %q", got)
	}
	if e := end.Chat[1].Data.(events.ChatError); e.Error != "provider overloaded" || e.ErrorKind != events.KindProvider {
		t.Errorf("chat:error = %+v", e)
	}
	if f := end.Chat[len(end.Chat)-1].Data.(events.ChatStreamFinished); f.Status != events.FinishError {
		t.Errorf("finish = %+v", f)
	}
}

func TestFencingAndReplays(t *testing.T) {
	s := New(testRun(), nil)
	feed(s, claimed, running)
	// A redelivered event is stored again (idempotent) but routed once.
	again := s.Route(events.Envelope{Run: "run-1", Epoch: 3, Seq: 2, Output: running})
	if !again.Store || len(again.Chat) != 0 {
		t.Errorf("replay = %+v, want stored, not routed", again)
	}
	// An older epoch is a zombie.
	if o := s.Route(events.Envelope{Run: "run-1", Epoch: 2, Seq: 9, Output: running}); o.Store || o.DropReason == "" {
		t.Errorf("stale epoch = %+v, want dropped", o)
	}
	// streammgr's own event (seq 0) takes the next seq of the current epoch.
	lost := s.Route(events.Envelope{Run: "run-1", Epoch: 0, Seq: 0, Output: events.RunState{State: events.RunLost}})
	if lost.Epoch != 3 || lost.Seq != 3 || lost.Terminal != events.RunLost {
		t.Errorf("injected event = epoch %d seq %d terminal %q", lost.Epoch, lost.Seq, lost.Terminal)
	}
	// Nothing after the end.
	if o := s.Route(events.Envelope{Run: "run-1", Epoch: 3, Seq: 4, Output: text("late")}); o.Store {
		t.Error("an event after the terminal one was stored")
	}
}

func TestRoutingIsDeterministic(t *testing.T) {
	outs := func() []Outcome {
		return feed(New(testRun(), nil), claimed, toolUse("a", "Bash"), toolResult("a"), text("done"),
			events.RunState{State: events.RunCancelled})
	}
	a, b := outs(), outs()
	for i := range a {
		if !reflect.DeepEqual(a[i].Inserts, b[i].Inserts) || len(a[i].Chat) != len(b[i].Chat) {
			t.Fatalf("outcome %d differs between two routings of the same events", i)
		}
		for n := range a[i].Chat {
			if a[i].Chat[n].MsgID(n) != b[i].Chat[n].MsgID(n) {
				t.Fatalf("chat event ids differ: a replay would not be deduplicated")
			}
		}
	}
}

func TestMCPFailuresNotifyButSoftStatusesDoNot(t *testing.T) {
	s := New(testRun(), nil)
	outs := feed(s, events.SystemInit{SessionID: "eng-1", MCPServers: []events.MCPServer{
		{Name: "ok", Status: events.MCPConnected}, {Name: "wait", Status: events.MCPPending},
		{Name: "auth", Status: events.MCPNeedsAuth}, {Name: "down", Status: events.MCPFailed}}})
	if len(outs[0].Chat) != 1 || !strings.Contains(outs[0].Chat[0].Data.(events.ChatNotification).Message, "down") {
		t.Errorf("notifications = %+v", outs[0].Chat)
	}
}

func TestUsageBackfillForPerTurnUsageEngines(t *testing.T) {
	r := testRun()
	r.Engine = events.EngineCodex
	s := New(r, nil)
	outs := feed(s, text("one"), toolResult("x"), text("two"), success)
	if n := len(outs[3].Updates); n != 2 {
		t.Fatalf("usage backfilled into %d messages, want 2", n)
	}
	for _, u := range outs[3].Updates {
		if u.Output.(events.AssistantMessage).Usage == nil {
			t.Error("a backfilled message has no usage")
		}
	}
}

func TestSummaryAndTitle(t *testing.T) {
	if got := summary("Here:\n```go\nfunc x() {}\n```\ndone " + strings.Repeat("a", 300)); len([]rune(got)) != 200 || strings.Contains(got, "func") {
		t.Errorf("summary = %q", got)
	}
	if got := Title("  a\n\nlong " + strings.Repeat("é", 100)); len([]rune(got)) != 80 || !strings.HasPrefix(got, "a long") {
		t.Errorf("title = %q", got)
	}
}

// TestTheWorkersClampedEffortIsStamped: the running state carries the effort
// the worker clamped the request to; messages after it carry that one, and
// none at all when the model has no effort knob. A running state without
// one (an older worker) leaves the requested effort.
func TestTheWorkersClampedEffortIsStamped(t *testing.T) {
	for _, tt := range []struct {
		name   string
		effort *string
		want   string
	}{
		{"clamped to the model's default", ptr("medium"), "medium"},
		{"the model has no knob", ptr(""), ""},
		{"not reported", nil, "high"},
	} {
		s := New(testRun(), nil)
		outs := feed(s, claimed, events.RunState{State: events.RunRunning, ReasoningEffort: tt.effort}, text("Hello"))
		if got := outs[1].Run.Effort; (got == nil) != (tt.effort == nil) || (got != nil && *got != *tt.effort) {
			t.Errorf("%s: run change effort = %v, want %v", tt.name, got, tt.effort)
		}
		m := outs[2].Inserts[0].Output.(events.AssistantMessage)
		if m.Engine.ReasoningEffort != tt.want || s.Run().Effort != tt.want {
			t.Errorf("%s: message effort %q, run effort %q; want %q", tt.name, m.Engine.ReasoningEffort, s.Run().Effort, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestEveryEndClosesOpenPartials: however a run ends while a text or
// reasoning stream is open, clients get the stream's chat:partial end before
// the end of the turn, once; a stream the engine closed is not closed again.
func TestEveryEndClosesOpenPartials(t *testing.T) {
	startReasoning := events.StreamEvent{Event: events.StreamStart, SessionID: "eng-1", Reasoning: true}
	thinking := events.StreamEvent{Event: events.StreamDelta, SessionID: "eng-1", Text: "hmm", Reasoning: true}
	for _, tt := range []struct {
		name string
		give []events.Output
		want string // the terminal outcome's partial frames
	}{
		{"cancelled mid-text", []events.Output{startText, delta("half"), events.RunState{State: events.RunCancelled}}, "end"},
		{"interrupted mid-text", []events.Output{startText, delta("half"), events.RunState{State: events.RunCompleted, Reason: "interrupted"}}, "end"},
		{"failed mid-text", []events.Output{startText, delta("half"), events.RunState{State: events.RunFailed, Error: "boom"}}, "end"},
		{"lost mid-reasoning", []events.Output{startReasoning, thinking, events.RunState{State: events.RunLost}}, "end(reasoning)"},
		{"cancelled after the stream closed", []events.Output{startText, delta("half"), stopText, events.RunState{State: events.RunCancelled}}, ""},
		{"completed normally", []events.Output{startText, delta("all"), stopText, text("all"), success, completed}, ""},
	} {
		outs := feed(New(testRun(), nil), tt.give...)
		end := outs[len(outs)-1]
		var got []string
		firstPartial, lastPartial, firstOther := -1, -1, -1
		for i, ev := range end.Chat {
			p, ok := ev.Data.(events.ChatPartial)
			if !ok {
				if firstOther < 0 {
					firstOther = i
				}
				continue
			}
			s := string(p.EventType)
			if p.Reasoning {
				s += "(reasoning)"
			}
			got = append(got, s)
			if firstPartial < 0 {
				firstPartial = i
			}
			lastPartial = i
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%s: partial frames at the end = %q, want %q", tt.name, got, tt.want)
		}
		if firstPartial >= 0 && (firstPartial != 0 || lastPartial > firstOther) {
			t.Errorf("%s: the partial end is not the first thing the end says: %s", tt.name, chatTypes([]Outcome{end}))
		}
		// What a stopped turn streamed is still saved after the stream is
		// closed (an interrupted engine saves its own).
		if tt.want != "" && end.Terminal != events.RunCompleted && len(end.Inserts) == 0 {
			t.Errorf("%s: the partial was closed but not saved", tt.name)
		}
	}
}

// TestARebuiltStateClosesTheStreamItWasIn: a state rebuilt from the event
// log after a restart knows a stream is open and closes it at the end.
func TestARebuiltStateClosesTheStreamItWasIn(t *testing.T) {
	p := &Partial{}
	for _, o := range []events.Output{startText, delta("a"), stopText, text("a"), startText, delta("b"), delta("c")} {
		p.Fold(o)
	}
	if open, _ := p.Open(); !open || p.Text() != "bc" {
		t.Fatalf("rebuilt partial = %q open %v, want \"bc\" open", p.Text(), open)
	}
	outs := feed(New(testRun(), p), events.RunState{State: events.RunCancelled})
	if got := chatTypes(outs); !strings.HasPrefix(got, "chat:partial:end chat:message:assistant") {
		t.Errorf("cancel of a rebuilt run = %s, want the partial closed, then saved", got)
	}
}

// TestRecordedTurnsPushEachMessageOnce routes turns the real CLIs produced
// (the adapters' recorded outputs, copied from engine-worker's testdata):
// every saved message reaches clients once, with its parent row id, even
// though Claude Code leaves the last stop reason and Codex every usage to
// the result, which are written back into the rows.
func TestRecordedTurnsPushEachMessageOnce(t *testing.T) {
	tests := []struct {
		give        string // testdata file
		engine      events.EngineType
		wantUpdates int // rows the result rewrites
	}{
		{"claude-think-tool.json", events.EngineClaudeCode, 1},
		{"codex-think-tool.json", events.EngineCodex, 3},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.give))
			if err != nil {
				t.Fatal(err)
			}
			var raw []json.RawMessage
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			turn := []events.Output{claimed, running}
			for _, r := range raw {
				o, err := events.DecodeOutput(r)
				if err != nil {
					t.Fatalf("%s: %v", r, err)
				}
				turn = append(turn, o)
			}
			r := testRun()
			r.Engine = tt.engine
			outs := feed(New(r, nil), append(turn, completed)...)
			pushed := map[string]int{}
			inserted, updates := 0, 0
			for _, o := range outs {
				inserted += len(o.Inserts)
				updates += len(o.Updates)
				for _, ev := range o.Chat {
					m, ok := ev.Data.(events.ChatMessage)
					if !ok {
						continue
					}
					pushed[m.MessageRowID]++
					if m.ParentMessageRowID == "" {
						t.Errorf("chat:message %s (%s) has no parent row id", m.MessageRowID, m.Message.OutputType())
					}
				}
			}
			for row, n := range pushed {
				if n != 1 {
					t.Errorf("row %s pushed to clients %d times, want once", row, n)
				}
			}
			if len(pushed) != inserted || updates != tt.wantUpdates {
				t.Errorf("%d rows pushed, %d inserted, %d rewritten; want every insert pushed and %d rewritten",
					len(pushed), inserted, updates, tt.wantUpdates)
			}
		})
	}
}
