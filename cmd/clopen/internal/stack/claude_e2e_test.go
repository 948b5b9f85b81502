package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/natsx"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/fakellm"
)

// engineSetup returns the engines setup of a stack whose worker runs the
// installed engine typ against an in-process fakellm, and fakellm. Without
// the pinned install the test is skipped (CI installs it, and fails here
// when it is missing).
func engineSetup(t *testing.T, typ events.EngineType) (*engines.Setup, *fakellm.Server) {
	t.Helper()
	setup := engines.SetupFromEnv(t.TempDir(), os.Getenv, nil)
	setup.EnginesDir = engines.SetupFromEnv(engines.DefaultDataDir(os.Getenv), os.Getenv, nil).Root()
	setup.OperatorCredentials = true // tenants without an account run on the fakellm's
	spec, _ := engines.Lookup(typ)
	if v, err := spec.InstalledVersion(context.Background(), setup.Root()); err != nil || v != spec.Version {
		msg := string(typ) + " " + spec.Version + " is not installed in " + setup.Root() + ": run `go run ./cmd/clopen engines install " + string(typ) + "`"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	llm := fakellm.New(fakellm.Config{})
	url, stop, err := llm.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	setup.LLMBaseURL = url
	return &setup, llm
}

// TestClaudeCodeEndToEnd runs two turns of a Claude Code chat through the
// whole system: start → streammgr → job → worker → the real CLI → fakellm,
// and back as chat events and saved messages. The follow-up turn resumes
// (forks) the first one's engine session and sees its history.
func TestClaudeCodeEndToEnd(t *testing.T) {
	setup, llm := engineSetup(t, events.EngineClaudeCode)
	dir := t.TempDir()
	h := start(t, Config{Dir: dir, Engines: setup})
	h.waitEngine(events.EngineClaudeCode, engines.ClaudeCodeVersion)
	tn := newTenant()
	var s events.Session
	h.must(events.OpSessionCreate, events.SessionCreate{Caller: tn.Caller, ProjectID: tn.project,
		Engine: events.EngineClaudeCode, Model: "claude-opus-5-5"}, &s)
	feed := h.follow(tn.TenantID, s.ID, 0)

	sent := time.Now()
	first := h.send(tn, s.ID, "Remember the word APPLE-7.")
	evs := feed.waitFor(t, 60*time.Second, finished(first.RunID))
	if r := h.waitRunState(tn, first.RunID, events.RunCompleted); r.MeteredUsage != nil {
		t.Errorf("an unconfined run, which no model proxy meters, has metered usage %+v", r.MeteredUsage)
	}
	text1, session1 := assistantOf(evs, first.RunID)
	if text1 != "Hello from fakellm." || session1 == "" {
		t.Fatalf("first turn's assistant message = %q in session %q; events: %s", text1, session1, summarize(evs))
	}
	if !has(evs, func(ev events.ChatEvent) bool {
		p, ok := ev.Data.(events.ChatPartial)
		return ok && ev.RunID == first.RunID && p.DeltaText != ""
	}) {
		t.Errorf("no streamed text in the first turn: %s", summarize(evs))
	}

	t.Logf("first turn through the stack: %s", timings(evs, first.RunID, sent))

	time.Sleep(300 * time.Millisecond) // the warm process starts, as it would while a person reads
	sent = time.Now()
	second := h.send(tn, s.ID, "Which word was it?")
	evs = feed.waitFor(t, 60*time.Second, finished(second.RunID))
	h.waitRunState(tn, second.RunID, events.RunCompleted)
	text2, session2 := assistantOf(evs, second.RunID)
	if text2 != "Hello from fakellm." || session2 == "" || session2 == session1 {
		t.Errorf("follow-up = %q in session %q, want the answer in a session forked from %q", text2, session2, session1)
	}
	t.Logf("follow-up through the stack: %s", timings(evs, second.RunID, sent))
	reqs := llm.Requests()
	if turns := reqs[len(reqs)-1].UserTurns; !slices.Contains(turns, "Remember the word APPLE-7.") {
		t.Errorf("the follow-up's model request carried user turns %q, not the first turn", turns)
	}

	// A tool call runs for real in the project's workspace on the worker.
	third := h.send(tn, s.ID, "@@TOOL@@ Run the command.")
	evs = feed.waitFor(t, 60*time.Second, finished(third.RunID))
	h.waitRunState(tn, third.RunID, events.RunCompleted)
	if text, _ := assistantOf(evs, third.RunID); text != "Tool finished. Result: ok" {
		t.Errorf("tool turn ended with %q; events: %s", text, summarize(evs))
	}
	if _, err := os.Stat(filepath.Join(dir, tn.TenantID, tn.project, "sessions", s.ID, "fakellm_out.txt")); err != nil {
		t.Errorf("the tool's file in the workspace: %v", err)
	}
}

// waitEngine waits until a worker advertises the engine at version.
func (h *harness) waitEngine(engine events.EngineType, version string) {
	h.t.Helper()
	// The bucket is the workers' to declare: a test whose worker process is
	// still starting waits for it.
	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kv, err := natsx.WaitKV(wctx, h.js, events.BucketWorkers)
	if err != nil {
		h.t.Fatal(err)
	}
	// A worker started on a busy machine may take a minute or more to
	// check an engine (its CLI's start-up); it returns as soon as one has.
	deadline := time.Now().Add(150 * time.Second)
	for time.Now().Before(deadline) {
		keys, _ := kv.Keys(context.Background())
		for _, k := range keys {
			e, err := kv.Get(context.Background(), k)
			if err != nil {
				continue
			}
			var info events.WorkerInfo
			_ = json.Unmarshal(e.Value(), &info)
			if slices.Contains(info.Engines, events.EngineStatus{Engine: engine, Version: version}) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Fatalf("no worker advertises %s %s", engine, version)
}

// timings says when, after sent, a run's first text delta and its
// chat:complete were routed (streammgr's timestamps, on this machine's clock).
func timings(evs []events.ChatEvent, run string, sent time.Time) string {
	var first, done time.Duration
	for _, ev := range evs {
		if ev.RunID != run {
			continue
		}
		if p, ok := ev.Data.(events.ChatPartial); ok && p.DeltaText != "" && first == 0 {
			first = ev.Timestamp.Sub(sent)
		}
		if ev.Type == events.ChatTypeComplete {
			done = ev.Timestamp.Sub(sent)
		}
	}
	return fmt.Sprintf("first text after %v, complete after %v", first.Round(time.Millisecond), done.Round(time.Millisecond))
}

// assistantOf is the text and engine session of a run's last assistant
// message with text.
func assistantOf(evs []events.ChatEvent, run string) (text, session string) {
	for _, ev := range evs {
		m, ok := ev.Data.(events.ChatMessage)
		if !ok || ev.RunID != run {
			continue
		}
		if a, ok := m.Message.(events.AssistantMessage); ok {
			for _, b := range a.Content {
				if tb, ok := b.(events.TextBlock); ok {
					text, session = tb.Text, a.SessionID
				}
			}
		}
	}
	return text, session
}

// TestClaudeCodeRunsOnTheTenantsAccount: a tenant's Claude Code turns
// authenticate with the tenant's own account (its sealed credential,
// unsealed for the process); a tenant without one runs on the worker's
// credentials; naming another tenant's account fails the run with
// needs-account and reaches no model.
func TestClaudeCodeRunsOnTheTenantsAccount(t *testing.T) {
	setup, llm := engineSetup(t, events.EngineClaudeCode)
	h := start(t, Config{Dir: t.TempDir(), Engines: setup})
	h.waitEngine(events.EngineClaudeCode, engines.ClaudeCodeVersion)
	lastKey := func() string {
		reqs := llm.Requests()
		for i := len(reqs) - 1; i >= 0; i-- {
			if reqs[i].Format == "anthropic" {
				return reqs[i].Key
			}
		}
		return ""
	}
	turn := func(tn tenant, account string, want events.RunStateName) events.Run {
		var s events.Session
		h.must(events.OpSessionCreate, events.SessionCreate{Caller: tn.Caller, ProjectID: tn.project,
			Engine: events.EngineClaudeCode, Model: "claude-sonnet-4-5"}, &s)
		feed := h.follow(tn.TenantID, s.ID, 0)
		var r events.StartTurnReply
		h.must(events.OpStart, events.StartTurnRequest{Caller: tn.Caller, SessionID: s.ID, AccountID: account,
			Prompt: []events.Block{events.TextBlock{Text: "Hello."}}}, &r)
		feed.waitFor(t, 60*time.Second, finished(r.RunID))
		return h.waitRunState(tn, r.RunID, want)
	}

	a, b := newTenant(), newTenant()
	accountA := h.engineAccount(a.TenantID, events.EngineClaudeCode) // credential "sk-test"
	if run := turn(a, "", events.RunCompleted); run.State != events.RunCompleted || lastKey() != fakellm.KeyID("sk-test") {
		t.Errorf("tenant with an account: run %s (%s), model called with key %q, want the account's %q",
			run.State, run.Error, lastKey(), fakellm.KeyID("sk-test"))
	}
	if run := turn(b, "", events.RunCompleted); run.State != events.RunCompleted || lastKey() == fakellm.KeyID("sk-test") || lastKey() == "" {
		t.Errorf("tenant without an account: run %s (%s), key %q: want the worker's own", run.State, run.Error, lastKey())
	}
	before := len(llm.Requests())
	run := turn(b, accountA, events.RunFailed)
	if run.State != events.RunFailed || run.ErrorKind != string(events.KindNeedsAccount) {
		t.Errorf("another tenant's account: run %s, kind %q (%s); want failed with %s", run.State, run.ErrorKind, run.Error, events.KindNeedsAccount)
	}
	if after := len(llm.Requests()); after != before {
		t.Errorf("another tenant's account reached the model (%d requests)", after-before)
	}
}
