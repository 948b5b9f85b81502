package stack

import (
	"cmp"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/fakellm"
)

// portableEngines are the engines whose chats TestPortableRuns moves from
// one worker process to another: each on its real CLI against fakellm.
// Qwen Code's session files are carried too, but its follow-up on another
// worker does not replay turn 1 yet (docs/ENGINES.md), so it is not here.
var portableEngines = []events.EngineType{events.EngineClaudeCode, events.EngineCodex, events.EnginePi}

// spawnEngineWorker starts a worker process of its own, with its own data
// dir (engine state), workspaces and snapshot cache, offering the
// installed engines against llmURL.
func (h *harness) spawnEngineWorker(id, root string, setup *engines.Setup) *exec.Cmd {
	h.t.Helper()
	return h.spawn("worker", "CLOPEN_WORKER_ID="+id, "CLOPEN_WORKER_CAPACITY=8",
		"CLOPEN_DATA="+filepath.Join(root, "data"), "CLOPEN_WORKSPACES="+filepath.Join(root, "workspaces"),
		"CLOPEN_ENGINES_DIR="+setup.Root(), "CLOPEN_LLM_BASE_URL="+setup.LLMBaseURL, engines.EnvOperatorCredentials+"=1", "CLOPEN_LOG_LEVEL="+cmp.Or(os.Getenv("CLOPEN_TEST_WORKER_LOG"), "error"))
}

// waitEngines waits until a worker advertises each engine at its pinned
// version.
func (h *harness) waitEngines(types []events.EngineType) {
	h.t.Helper()
	for _, e := range types {
		spec, _ := engines.Lookup(e)
		h.waitEngine(e, spec.Version)
	}
}

// stopWorker stops a worker process gracefully and waits for it.
func stopWorker(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the worker did not stop within 60 s of SIGTERM")
	}
}

// shell is a fakellm prompt that has the agent run command in its shell.
func shell(text, command string) string {
	return text + " @@SH:" + base64.RawURLEncoding.EncodeToString([]byte(command)) + "@@"
}

// TestPortableRuns runs each engine's chat on two workers that share
// nothing but the bus: turn 1 on worker A writes a file, A stops, and
// turn 2 on worker B resumes the engine session (the model request holds
// turn 1) and sees the file, from the snapshot A left.
func TestPortableRuns(t *testing.T) {
	var ready []events.EngineType
	setup, llm := engineSetup(t, events.EngineClaudeCode)
	for _, e := range portableEngines {
		spec, _ := engines.Lookup(e)
		if v, err := spec.InstalledVersion(t.Context(), setup.Root()); err == nil && v == spec.Version {
			ready = append(ready, e)
		} else if os.Getenv("CI") == "true" {
			t.Fatalf("%s %s is not installed", e, spec.Version)
		}
	}
	h := start(t, Config{NoWorkers: true})
	rootA, rootB := t.TempDir(), t.TempDir()
	a := h.spawnEngineWorker("worker-a", rootA, setup)
	h.waitEngines(ready)
	tn := newTenant()
	type chat struct {
		engine   events.EngineType
		session  events.Session
		feed     *chatFeed
		word     string
		snapshot string
	}
	var chats []*chat
	for _, e := range ready {
		c := &chat{engine: e, word: "PEAR-" + strings.ToUpper(string(e))}
		h.must(events.OpSessionCreate, events.SessionCreate{Caller: tn.Caller, ProjectID: tn.project, Engine: e}, &c.session)
		c.feed = h.follow(tn.TenantID, c.session.ID, 0)
		chats = append(chats, c)
	}
	// Turn 1 of every chat at once, on worker A.
	firsts := map[events.EngineType]string{}
	for _, c := range chats {
		firsts[c.engine] = h.send(tn, c.session.ID, shell("Remember the word "+c.word+".", "echo "+c.word+" > notes.txt")).RunID
	}
	for _, c := range chats {
		run := firsts[c.engine]
		evs := c.feed.waitFor(t, 3*time.Minute, finished(run))
		r := h.waitRunState(tn, run, events.RunCompleted)
		if r.WorkerID != "worker-a" {
			t.Fatalf("%s: turn 1 ran on %q, want worker-a", c.engine, r.WorkerID)
		}
		if r.Snapshot == nil || r.Snapshot.ID == "" {
			t.Fatalf("%s: turn 1 left no snapshot: %+v; events: %s", c.engine, r.Snapshot, summarize(evs))
		}
		c.snapshot = r.Snapshot.ID
		if !slices.ContainsFunc(r.Snapshot.Changes, func(fc events.FileChange) bool {
			return fc.Path == "notes.txt" && fc.Kind == events.FileAdded && fc.LinesAdded == 1
		}) {
			t.Errorf("%s: turn 1's changes %+v do not list notes.txt added with one line", c.engine, r.Snapshot.Changes)
		}
	}
	stopWorker(t, a)

	b := h.spawnEngineWorker("worker-b", rootB, setup)
	defer stopWorker(t, b)
	h.waitEngines(ready)
	seconds := map[events.EngineType]string{}
	for _, c := range chats {
		seconds[c.engine] = h.send(tn, c.session.ID, shell("Which word was it?", "cat notes.txt")).RunID
	}
	for _, c := range chats {
		run := seconds[c.engine]
		evs := c.feed.waitFor(t, 3*time.Minute, finished(run))
		r := h.waitRunState(tn, run, events.RunCompleted)
		if r.WorkerID != "worker-b" {
			t.Errorf("%s: turn 2 ran on %q, want worker-b", c.engine, r.WorkerID)
		}
		// The file turn 1 wrote is in B's copy of the session.
		ws := filepath.Join(rootB, "workspaces", tn.TenantID, tn.project, "sessions", c.session.ID)
		if got, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || strings.TrimSpace(string(got)) != c.word {
			t.Errorf("%s: notes.txt on worker B = %q, %v; want %s", c.engine, got, err, c.word)
		}
		if !toolOutputHas(h.runEventsOnBus(tn.TenantID, run), c.word) {
			t.Errorf("%s: the agent's `cat notes.txt` on worker B did not print %s; events: %s", c.engine, c.word, summarize(evs))
		}
		if r.Snapshot == nil || r.Snapshot.ID == "" || r.Snapshot.ID == c.snapshot {
			t.Errorf("%s: turn 2's snapshot = %+v, want a new one after %s", c.engine, r.Snapshot, c.snapshot)
		}
		if !turnCarried(llm.Requests(), "Which word was it?", "Remember the word "+c.word) {
			t.Errorf("%s: no model request of turn 2 carried turn 1's prompt: the engine session did not follow the chat", c.engine)
		}
	}
}

// toolOutputHas reports whether a tool result among a run's events holds
// text.
func toolOutputHas(envs []events.Envelope, text string) bool {
	for _, env := range envs {
		if m, ok := env.Output.(events.UserMessage); ok {
			for _, b := range m.Content {
				if r, ok := b.(events.ToolResultBlock); ok && strings.Contains(r.Content, text) {
					return true
				}
			}
		}
	}
	return false
}

// turnCarried reports whether a model request whose last user turn holds
// last also carried an earlier user turn holding earlier.
func turnCarried(reqs []fakellm.Request, last, earlier string) bool {
	for _, r := range reqs {
		n := len(r.UserTurns)
		if n < 2 || !strings.Contains(r.UserTurns[n-1], last) {
			continue
		}
		if slices.ContainsFunc(r.UserTurns[:n-1], func(u string) bool { return strings.Contains(u, earlier) }) {
			return true
		}
	}
	return false
}
