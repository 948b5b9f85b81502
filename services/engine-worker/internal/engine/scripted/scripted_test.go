package scripted

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// recorder collects a run's outputs.
type recorder struct {
	mu  sync.Mutex
	out []events.Output
}

func (r *recorder) emit(o events.Output) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out = append(r.out, o)
	return nil
}

func (r *recorder) types() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, o := range r.out {
		t := o.OutputType()
		if se, ok := o.(events.StreamEvent); ok {
			t += ":" + string(se.Event)
		}
		s = append(s, t)
	}
	return strings.Join(s, " ")
}

// answering is an Interaction that answers every question with the first
// option and every permission prompt with allow, after an optional delay.
type answering struct {
	deny  bool
	asked chan string
}

func (a *answering) AskUser(ctx context.Context, id string, in events.AskUserQuestionInput) (map[string]string, error) {
	if a.asked != nil {
		a.asked <- id
	}
	out := map[string]string{}
	for _, q := range in.Questions {
		out[q.Question] = q.Options[0].Label
	}
	return out, nil
}

func (a *answering) Permit(ctx context.Context, p engine.PermissionRequest) (engine.Decision, error) {
	if a.deny {
		return engine.Decision{Allow: false, Message: "no"}, nil
	}
	return engine.Decision{Allow: true}, nil
}

func newEngine(t *testing.T) *Engine {
	t.Helper()
	lib, err := LoadLibrary("")
	if err != nil {
		t.Fatal(err)
	}
	return New(lib)
}

func play(t *testing.T, e *Engine, ctx context.Context, model string, ia engine.Interaction) (*recorder, error) {
	t.Helper()
	rec := &recorder{}
	err := e.Run(ctx, engine.Request{Model: model, Prompt: []events.Block{events.TextBlock{Text: "hi"}}, Interaction: ia}, rec.emit)
	return rec, err
}

func TestBuiltinScenariosPlayToAResult(t *testing.T) {
	e := newEngine(t)
	for _, name := range e.lib.Names() {
		t.Run(name, func(t *testing.T) {
			rec, err := play(t, e, context.Background(), "scripted/"+name+"?delay=0s", &answering{})
			if name == "error" {
				var ee *engine.Error
				if !errors.As(err, &ee) || ee.Kind != events.KindProvider {
					t.Fatalf("error scenario err = %v, want a provider engine.Error", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			last := rec.out[len(rec.out)-1]
			if _, ok := last.(events.Result); !ok {
				t.Fatalf("last output = %s, want result; outputs: %s", last.OutputType(), rec.types())
			}
			if _, ok := rec.out[0].(events.SystemInit); !ok {
				t.Errorf("first output = %s, want system_init", rec.out[0].OutputType())
			}
			for _, o := range rec.out {
				if _, err := events.EncodeOutput(o); err != nil {
					t.Errorf("output does not encode: %v", err)
				}
			}
		})
	}
}

func TestHelloStreamsThenSavesTheWholeText(t *testing.T) {
	rec, err := play(t, newEngine(t), context.Background(), "", &answering{})
	if err != nil {
		t.Fatal(err)
	}
	var deltas, whole string
	for _, o := range rec.out {
		switch v := o.(type) {
		case events.StreamEvent:
			deltas += v.Text
		case events.AssistantMessage:
			whole = v.Content[0].(events.TextBlock).Text
		}
	}
	if deltas == "" || deltas != whole {
		t.Errorf("deltas %q != saved text %q", deltas, whole)
	}
	if !strings.HasPrefix(rec.types(), "system_init stream_event:start stream_event:delta") ||
		!strings.HasSuffix(rec.types(), "stream_event:stop assistant result") {
		t.Errorf("outputs = %s", rec.types())
	}
}

func TestAgentChildrenCarryTheParentToolUse(t *testing.T) {
	rec, err := play(t, newEngine(t), context.Background(), "scripted/agent", &answering{})
	if err != nil {
		t.Fatal(err)
	}
	var agentID string
	children := 0
	for _, o := range rec.out {
		switch v := o.(type) {
		case events.AssistantMessage:
			if tu, ok := v.Content[0].(events.ToolUseBlock); ok && tu.Name == string(events.ToolAgent) {
				agentID = tu.ID
				if v.Parent.ToolUseID != "" {
					t.Error("the Agent call itself has a parent")
				}
				continue
			}
			if v.Parent.ToolUseID != "" {
				if v.Parent.ToolUseID != agentID {
					t.Errorf("child parent = %q, want the Agent call %q", v.Parent.ToolUseID, agentID)
				}
				children++
			}
		case events.UserMessage:
			tr := v.Content[0].(events.ToolResultBlock)
			if tr.ToolUseID == agentID && v.Parent.ToolUseID != "" {
				t.Error("the Agent result message has a parent tool use id; it must be null")
			}
		case events.StreamEvent:
			if agentID != "" && v.Event == events.StreamDelta && strings.Contains(v.Text, "test file") {
				t.Error("sub-agent text was streamed as deltas")
			}
		}
	}
	if children < 3 {
		t.Errorf("%d child messages tagged with the Agent call, want 3 (text, tool, text)", children)
	}
}

func TestInterruptIsASoftStopWithAResult(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(150*time.Millisecond, func() { cancel(engine.ErrInterrupted) })
	rec, err := play(t, newEngine(t), ctx, "scripted/slow", &answering{})
	if err != nil {
		t.Fatalf("interrupted Run err = %v, want nil (the turn ended with a result)", err)
	}
	types := rec.types()
	if !strings.HasSuffix(types, "stream_event:stop assistant result") {
		t.Fatalf("outputs after interrupt = %s", types)
	}
	msg := rec.out[len(rec.out)-2].(events.AssistantMessage)
	if msg.StopReason != events.StopInterrupted || msg.Content[0].(events.TextBlock).Text == "" {
		t.Errorf("partial message = %+v, want the text so far with stopReason interrupted", msg)
	}
}

func TestCancelStopsAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(100*time.Millisecond, func() { cancel(engine.ErrCancelled) })
	began := time.Now()
	rec, err := play(t, newEngine(t), ctx, "scripted/slow", &answering{})
	if !errors.Is(err, engine.ErrCancelled) {
		t.Fatalf("cancelled Run err = %v, want ErrCancelled", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("cancel took %v", d)
	}
	if _, ok := rec.out[len(rec.out)-1].(events.Result); ok {
		t.Error("a cancelled run emitted a result")
	}
}

func TestAskWaitsForTheAnswerAndPermissionDenialIsReported(t *testing.T) {
	asked := make(chan string, 1)
	rec, err := play(t, newEngine(t), context.Background(), "scripted/ask", &answering{asked: asked})
	if err != nil {
		t.Fatal(err)
	}
	id := <-asked
	found := false
	for _, o := range rec.out {
		if u, ok := o.(events.UserMessage); ok {
			tr := u.Content[0].(events.ToolResultBlock)
			found = found || (tr.ToolUseID == id && strings.Contains(tr.Content, `"Postgres"`))
		}
	}
	if !found {
		t.Errorf("no tool result carrying the answer for %s: %s", id, rec.types())
	}

	rec, err = play(t, newEngine(t), context.Background(), "scripted/permission", &answering{deny: true})
	if err != nil {
		t.Fatal(err)
	}
	denied := false
	for _, o := range rec.out {
		if u, ok := o.(events.UserMessage); ok {
			tr := u.Content[0].(events.ToolResultBlock)
			denied = denied || (tr.IsError && strings.Contains(tr.Content, "Permission denied"))
		}
	}
	if !denied {
		t.Errorf("denied permission not reported as an error tool result: %s", rec.types())
	}
}

func TestResolveAndParse(t *testing.T) {
	lib, _ := LoadLibrary("")
	tests := []struct {
		give    string
		want    string
		wantErr bool
	}{
		{"", "hello", false},
		{"scripted", "hello", false},
		{"scripted/tools", "tools", false},
		{"long", "long", false},
		{"scripted/nope", "", true},
		{"scripted/bench?deltas=50&delay=1ms", "bench", false},
		{"scripted/bench?deltas=x", "", true},
		{"scripted/bench?delay=-1s", "", true},
	}
	for _, tt := range tests {
		sc, err := lib.Resolve(tt.give)
		if (err != nil) != tt.wantErr || (err == nil && sc.Name != tt.want) {
			t.Errorf("Resolve(%q) = %v, %v; want %q, err %v", tt.give, sc, err, tt.want, tt.wantErr)
		}
	}
	sc, _ := lib.Resolve("scripted/bench?deltas=50&delay=1ms")
	if st := sc.Steps[0].Text; st.Repeat != 50 || time.Duration(st.Delay) != time.Millisecond {
		t.Errorf("bench parameters not applied: %+v", st)
	}
	if orig, _ := lib.Resolve("scripted/bench"); orig.Steps[0].Text.Repeat != 100 {
		t.Error("parameters changed the library's scenario")
	}
	for _, bad := range []string{`{"name":"x","steps":[{}]}`, `{"name":"Bad Name","steps":[]}`,
		`{"name":"x","steps":[{"text":{"text":"a"},"sleep":"1s"}]}`, `{"name":"x","unknown":1}`,
		`{"name":"x","steps":[{"agent":{"steps":[{"ask":{"questions":[]}}]}}]}`} {
		if _, err := ParseScenario([]byte(bad)); err == nil {
			t.Errorf("ParseScenario(%s) accepted", bad)
		}
	}
}

// TestSpendReportsItsUsageAsItGoes: each usage step sends the turn's
// running total (never a delta), and the result reports the total.
func TestSpendReportsItsUsageAsItGoes(t *testing.T) {
	rec, err := play(t, newEngine(t), context.Background(), "scripted/spend?delay=0s", &answering{})
	if err != nil {
		t.Fatal(err)
	}
	var reports []events.RunUsage
	var res events.Result
	for _, o := range rec.out {
		switch v := o.(type) {
		case events.RunUsage:
			reports = append(reports, v)
		case events.Result:
			res = v
		}
	}
	if len(reports) != 40 {
		t.Fatalf("%d usage reports, want 40: %s", len(reports), rec.types())
	}
	for i, u := range reports {
		want := events.TokenUsage{InputTokens: int64(i+1) * 1000, OutputTokens: int64(i+1) * 100, CacheReadInputTokens: int64(i+1) * 2000}
		if u.Source != events.UsageFromEngine || u.Usage != want {
			t.Fatalf("report %d = %+v, want the engine's running total %+v", i, u, want)
		}
	}
	last := reports[len(reports)-1]
	if res.Usage != last.Usage || res.TotalCostUSD != last.CostUSD || res.NumTurns != 40 || last.CostUSD < 0.399 || last.CostUSD > 0.401 {
		t.Errorf("result %+v $%v over %d calls, want the last report's total %+v $%v over 40", res.Usage, res.TotalCostUSD, res.NumTurns,
			last.Usage, last.CostUSD)
	}
}

func TestNegativeUsageStepIsRefused(t *testing.T) {
	_, err := ParseScenario([]byte(`{"name":"x","steps":[{"usage":{"inputTokens":-1}}]}`))
	if err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("ParseScenario = %v, want a refusal of the negative usage", err)
	}
}
