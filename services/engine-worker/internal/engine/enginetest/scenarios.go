package enginetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// What fakellm answers (see its package doc).
const (
	helloText     = "Hello from fakellm."
	toolFinished  = "Tool finished. Result: "
	toolOutFile   = "fakellm_out.txt"
	askQuestion   = "Which option?"
	askAnswer     = "Alpha"
	forcedFailure = "@@ERROR@@ forced a server error"
	longDeltas    = 2000 // @@LONG@@: 2,000 deltas of 6 bytes
)

func (s *suite) text(t *testing.T) {
	c := s.newChat(t)
	rec := NewRecorder()
	res, err := c.turn(t, "Say hello.", "", rec)
	mustSucceed(t, res, err)
	if got := assistantText(rec.Outputs()); got != helloText {
		t.Errorf("assistant text = %q, want %q", got, helloText)
	}
	if got := streamedText(rec.Outputs(), false); got != helloText {
		t.Errorf("streamed text = %q, want %q", got, helloText)
	}
}

// long streams 2,000 deltas: a reader that lets the CLI's stdout back up
// loses the end of it (engines.md §1.2).
func (s *suite) long(t *testing.T) {
	c := s.newChat(t)
	rec := NewRecorder()
	res, err := c.turn(t, "@@LONG@@ Stream a long answer.", "", rec)
	mustSucceed(t, res, err)
	outs := rec.Outputs()
	text, streamed := assistantText(outs), streamedText(outs, false)
	if len(text) != longDeltas*6 || streamed != text {
		t.Errorf("long answer: %d bytes saved, %d streamed (equal: %v); want %d of each", len(text), len(streamed), streamed == text, longDeltas*6)
	}
}

func (s *suite) thinking(t *testing.T) {
	c := s.newChat(t)
	rec := NewRecorder()
	res, err := c.turn(t, "@@THINK@@ Think first, then say hello.", "", rec)
	mustSucceed(t, res, err)
	outs := rec.Outputs()
	var reasoning string
	for _, o := range outs {
		if r, ok := o.(events.ReasoningMessage); ok {
			reasoning += r.Text
		}
	}
	if reasoning == "" {
		t.Errorf("no reasoning message; outputs: %s", kinds(outs))
	}
	if got := streamedText(outs, true); got == "" || !strings.Contains(reasoning, got) {
		t.Errorf("streamed reasoning %q is not the reasoning message %q", got, reasoning)
	}
	if got := assistantText(outs); got != helloText {
		t.Errorf("assistant text = %q, want %q", got, helloText)
	}
}

func (s *suite) tool(t *testing.T) {
	c := s.newChat(t)
	rec := NewRecorder()
	res, err := c.turn(t, "@@TOOL@@ Run the command.", "", rec)
	mustSucceed(t, res, err)
	outs := rec.Outputs()
	id := toolUseNamed(outs, string(events.ToolBash))
	if id == "" {
		t.Fatalf("no Bash tool_use; outputs: %s", kinds(outs))
	}
	if tr, ok := toolResult(outs, id); !ok || tr.IsError || !strings.Contains(tr.Content, "ok") {
		t.Errorf("tool result = %+v (found %v), want a success with the command's output", tr, ok)
	}
	data, err := os.ReadFile(filepath.Join(c.workspace, toolOutFile))
	if err != nil || strings.TrimSpace(string(data)) != "fakellm-tool-ran" {
		t.Errorf("the command's file: %q, %v; want fakellm-tool-ran", data, err)
	}
	if !strings.HasPrefix(assistantText(outs), toolFinished) {
		t.Errorf("final text = %q, want it to start with %q", assistantText(outs), toolFinished)
	}
	if s.f.Permissions {
		permits := rec.Permits()
		if len(permits) == 0 || permits[0].Tool != string(events.ToolBash) || permits[0].ToolUseID != id ||
			!strings.Contains(string(permits[0].Input), `"command"`) {
			t.Errorf("permission prompts = %+v, want one for Bash %s with its canonical input", permits, id)
		}
	}
}

func (s *suite) denied(t *testing.T) {
	c := s.newChat(t)
	rec := NewRecorder()
	rec.Decide = DenyAll
	res, err := c.turn(t, "@@TOOL@@ Run the command.", "", rec)
	mustSucceed(t, res, err)
	outs := rec.Outputs()
	id := toolUseNamed(outs, string(events.ToolBash))
	tr, ok := toolResult(outs, id)
	if id == "" || !ok || !tr.IsError {
		t.Errorf("tool result of the denied call = %+v (found %v), want is_error", tr, ok)
	}
	if _, err := os.Stat(filepath.Join(c.workspace, toolOutFile)); !os.IsNotExist(err) {
		t.Errorf("the denied command ran: stat = %v", err)
	}
}

// shellTools are the names under which the engines offer their shell tool
// (the ones fakellm picks for @@TOOL@@).
var shellTools = map[string]bool{"Bash": true, "bash": true, "shell": true, "exec_command": true,
	"run_shell_command": true, "run_commands": true, "execute": true, "terminal": true}

// deniedUpFront: with Bash on the policy's deny list, the engine does not
// even offer it, so the shell tool never runs although the interaction
// would allow everything it is asked about.
func (s *suite) deniedUpFront(t *testing.T) {
	c := s.newChat(t)
	c.denied = []string{string(events.ToolBash)}
	rec := NewRecorder()
	res, err := c.turn(t, "@@TOOL@@ Run the command.", "", rec)
	mustSucceed(t, res, err)
	for _, name := range s.lastTools(t) {
		if shellTools[name] {
			t.Errorf("the model was offered %s although Bash is denied", name)
		}
	}
	if _, err := os.Stat(filepath.Join(c.workspace, toolOutFile)); err == nil {
		t.Error("the denied shell tool ran: its file exists")
	}
}

func (s *suite) askUser(t *testing.T) {
	c := s.newChat(t)
	rec := NewRecorder()
	rec.Answers = map[string]string{askQuestion: askAnswer}
	res, err := c.turn(t, "@@ASK@@ Ask me something.", "", rec)
	mustSucceed(t, res, err)
	outs := rec.Outputs()
	id := toolUseNamed(outs, string(events.ToolAskUserQuestion))
	rec.mu.Lock()
	asked, seen := slices.Clone(rec.asked), slices.Clone(rec.askedSeen)
	rec.mu.Unlock()
	if id == "" || len(asked) != 1 || asked[0] != id || !seen[0] {
		t.Fatalf("questions asked %v (tool_use emitted first: %v), want exactly the AskUserQuestion %q", asked, seen, id)
	}
	if tr, ok := toolResult(outs, id); !ok || tr.IsError || !strings.Contains(tr.Content, askAnswer) {
		t.Errorf("question's tool result = %+v (found %v), want the answer %q", tr, ok, askAnswer)
	}
}

// askUserAtOnce answers the question the moment its tool_use is emitted,
// before the agent asks for the answer: a client may answer as soon as it
// is told it can, and the answer must reach the question.
func (s *suite) askUserAtOnce(t *testing.T) {
	c := s.newChat(t)
	rec := NewRecorder()
	rec.Answers, rec.AnswerAtOnce = map[string]string{askQuestion: askAnswer}, true
	res, err := c.turn(t, "@@ASK@@ Ask me something.", "", rec)
	mustSucceed(t, res, err)
	outs := rec.Outputs()
	id := toolUseNamed(outs, string(events.ToolAskUserQuestion))
	if early := rec.AnsweredAtOnce(); id == "" || !slices.Equal(early, []string{id}) {
		t.Fatalf("questions answered at once %v, want exactly the AskUserQuestion %q", early, id)
	}
	if refused := rec.Refused(); len(refused) > 0 {
		t.Errorf("an answer given as soon as the question was shown was refused: %v", refused)
	}
	if tr, ok := toolResult(outs, id); !ok || tr.IsError || !strings.Contains(tr.Content, askAnswer) {
		t.Errorf("question's tool result = %+v (found %v), want the answer %q", tr, ok, askAnswer)
	}
}

// mcpTool gives the turn an MCP server; fakellm calls its echo tool.
func (s *suite) mcpTool(t *testing.T) {
	c := s.newChat(t)
	c.mcp = []engine.MCPServer{{Name: "probe", URL: s.sb.MCPEcho(t)}}
	rec := NewRecorder()
	res, err := c.turn(t, "@@MCP@@ Call the echo tool.", "", rec)
	mustSucceed(t, res, err)
	outs := rec.Outputs()
	init, _ := outs[0].(events.SystemInit)
	if !slices.Contains(init.MCPServers, events.MCPServer{Name: "probe", Status: events.MCPConnected}) {
		t.Errorf("system_init MCP servers = %+v, want probe connected", init.MCPServers)
	}
	id := toolUseNamed(outs, "mcp__probe__echo")
	if tr, ok := toolResult(outs, id); id == "" || !ok || tr.IsError || !strings.Contains(tr.Content, "echo:hi") {
		t.Errorf("MCP tool result = %+v (call %q found %v), want echo:hi; outputs: %s; said %q; tools offered %v", tr, id, ok, kinds(outs),
			assistantText(outs), s.lastTools(t))
	}
}

// interrupt stops a stalled stream softly; the engine session must then
// take the next turn.
func (s *suite) interrupt(t *testing.T) {
	c := s.newChat(t)
	rec := NewRecorder()
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	go func() {
		select {
		case <-rec.FirstDelta():
			stop(engine.ErrInterrupted)
		case <-time.After(30 * time.Second):
		}
	}()
	began := time.Now()
	res, err := c.turnCtx(t, ctx, "@@SLOW@@ Tell me a long story.", "", rec)
	if err != nil {
		t.Fatalf("interrupted turn returned %v, want nil", err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("interrupted turn took %v; the stall was not cut short", took)
	}
	if !res.IsError() || res.SessionID == "" {
		t.Errorf("result = %+v, want an error subtype that names the session", res)
	}
	next := NewRecorder()
	res2, err := c.turn(t, "Say hello again.", res.SessionID, next)
	mustSucceed(t, res2, err)
	if got := assistantText(next.Outputs()); got != helloText {
		t.Errorf("turn after the interrupt said %q, want %q", got, helloText)
	}
}

// cancel stops a stalled stream hard: Run returns the cause promptly and
// the agent's processes are gone.
func (s *suite) cancel(t *testing.T) {
	c := s.newChat(t)
	rec := NewRecorder()
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	errc := make(chan error, 1)
	go func() { _, err := c.turnCtx(t, ctx, "@@SLOW@@ Tell me a long story.", "", rec); errc <- err }()
	select {
	case <-rec.FirstDelta():
	case <-time.After(30 * time.Second):
		t.Fatal("no text delta before the stall")
	}
	if n := len(processesIn(c.workspace)); n == 0 {
		t.Fatal("no agent process works in the workspace while the turn runs; the orphan check below could not fail")
	}
	began := time.Now()
	stop(engine.ErrCancelled)
	select {
	case err := <-errc:
		if !errors.Is(err, engine.ErrCancelled) {
			t.Errorf("cancelled turn returned %v, want ErrCancelled", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	t.Logf("cancel returned after %v", time.Since(began).Round(time.Millisecond))
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := processesIn(c.workspace)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still running in the workspace after cancel: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resumeAndFork checks that a resumed turn sees its history and, with Fork,
// that every resume makes a new session and leaves the resumed one as it was.
func (s *suite) resumeAndFork(t *testing.T) {
	c := s.newChat(t)
	const first, second, third = "Remember the word APPLE-7.", "Which word did I ask you to remember?", "Forget it; remember BANANA-3."
	r1, err := c.turn(t, first, "", NewRecorder())
	mustSucceed(t, r1, err)
	time.Sleep(300 * time.Millisecond) // let a warm process settle, as a person's next message would

	r2, err := c.turn(t, second, r1.SessionID, NewRecorder())
	mustSucceed(t, r2, err)
	if last := s.lastUserTurns(t); !hasTurn(last, first) || !hasTurn(last, second) {
		t.Errorf("resumed request's user turns = %q, want the first turn's %q too", last, first)
	}
	if !s.f.Fork {
		return
	}
	if r2.SessionID == "" || r2.SessionID == r1.SessionID {
		t.Errorf("resumed turn's session = %q, want a new one (resumed %q)", r2.SessionID, r1.SessionID)
	}
	// Resume the first session again: it must not have grown the second turn.
	r3, err := c.turn(t, third, r1.SessionID, NewRecorder())
	mustSucceed(t, r3, err)
	last := s.lastUserTurns(t)
	if !hasTurn(last, first) || hasTurn(last, second) {
		t.Errorf("fork of the original session sent user turns %q: want %q and not %q", last, first, second)
	}
	if r3.SessionID == r1.SessionID || r3.SessionID == r2.SessionID {
		t.Errorf("fork's session = %q, want one unlike %q and %q", r3.SessionID, r1.SessionID, r2.SessionID)
	}
}

// resumeAfterRestart cancels a turn (the agent's processes are stopped),
// then resumes the session on a new process: the model must still get the
// turn from before the cancel, and no message may repeat an earlier turn's
// text.
func (s *suite) resumeAfterRestart(t *testing.T) {
	c := s.newChat(t)
	const first, third = "Remember the word APPLE-7.", "Which word did I ask you to remember?"
	r1, err := c.turn(t, first, "", NewRecorder())
	mustSucceed(t, r1, err)

	rec := NewRecorder()
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	errc := make(chan error, 1)
	go func() { _, err := c.turnCtx(t, ctx, "@@SLOW@@ Tell me a long story.", r1.SessionID, rec); errc <- err }()
	select {
	case <-rec.FirstDelta():
	case <-time.After(30 * time.Second):
		t.Fatal("no text delta before the stall")
	}
	stop(engine.ErrCancelled)
	if err := <-errc; !errors.Is(err, engine.ErrCancelled) {
		t.Fatalf("cancelled turn returned %v, want ErrCancelled", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(processesIn(c.workspace)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}

	next := NewRecorder()
	r3, err := c.turn(t, third, r1.SessionID, next)
	mustSucceed(t, r3, err)
	if last := s.lastUserTurns(t); !hasTurn(last, first) || !hasTurn(last, third) {
		t.Errorf("the turn after the restart sent user turns %q, want the first turn's %q too", last, first)
	}
	var said []string
	for _, o := range next.Outputs() {
		if a, ok := o.(events.AssistantMessage); ok {
			for _, b := range a.Content {
				if tb, ok := b.(events.TextBlock); ok {
					said = append(said, tb.Text)
				}
			}
		}
	}
	if len(said) != 1 || said[0] != helloText {
		t.Errorf("the turn after the restart said %q, want only %q (no earlier turn's text)", said, helloText)
	}
}

func (s *suite) providerError(t *testing.T) {
	c := s.newChat(t)
	rec := NewRecorder()
	res, err := c.turn(t, "@@ERROR@@ Fail, please.", "", rec)
	if err == nil || engine.KindOf(err) != events.KindProvider {
		t.Errorf("Run = %v (kind %s), want a provider error", err, engine.KindOf(err))
	}
	if s.f.OpaqueServerErrors {
		if !res.IsError() || len(res.Errors) == 0 || strings.TrimSpace(res.Errors[0]) == "" {
			t.Errorf("result = %+v, want a failure that says something", res)
		}
		return
	}
	if !res.IsError() || !strings.Contains(strings.Join(res.Errors, " "), forcedFailure) {
		t.Errorf("result = %+v, want a failure carrying %q", res, forcedFailure)
	}
}

func (s *suite) usage(t *testing.T) {
	c := s.newChat(t)
	res, err := c.turn(t, "Say hello.", "", NewRecorder())
	mustSucceed(t, res, err)
	if res.Usage.InputTokens <= 0 || res.Usage.OutputTokens <= 0 || res.NumTurns < 1 {
		t.Errorf("result usage = %+v, turns %d; want tokens both ways and at least one turn", res.Usage, res.NumTurns)
	}
	if s.f.Cost && res.TotalCostUSD <= 0 {
		t.Errorf("result cost = %v, want a positive totalCostUsd", res.TotalCostUSD)
	}
}

// lastTools are the tools offered in fakellm's latest model request.
func (s *suite) lastTools(t *testing.T) []string {
	t.Helper()
	reqs := s.sb.Requests(t)
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1].Tools
}

// lastUserTurns are the user turns of fakellm's latest model request.
func (s *suite) lastUserTurns(t *testing.T) []string {
	t.Helper()
	reqs := s.sb.Requests(t)
	for i := len(reqs) - 1; i >= 0; i-- {
		if len(reqs[i].UserTurns) > 0 {
			return reqs[i].UserTurns
		}
	}
	return nil
}

// hasTurn reports whether one of the user turns is prompt, or ends with
// it on a line of its own: some agents put their own context before the
// first prompt of a session, in the same user turn (Gemini's
// <session_context>).
func hasTurn(turns []string, prompt string) bool {
	return slices.ContainsFunc(turns, func(t string) bool { return t == prompt || strings.HasSuffix(t, "\n"+prompt) })
}

func mustSucceed(t *testing.T, res events.Result, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Subtype != events.ResultSuccess {
		t.Fatalf("result = %+v, want success", res)
	}
}
