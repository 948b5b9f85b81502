package stack

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// portableEngines are the engines whose chats TestPortableRuns moves from
// one worker process to another: each on its real CLI against fakellm.
var portableEngines = []events.EngineType{events.EngineClaudeCode, events.EngineCodex, events.EnginePi, events.EngineQwen,
	events.EngineGemini, events.EngineOpenCode, events.EngineCline, events.EngineCopilot}

// retryEngines are the engines TestRetryLostRunOnAnotherWorker runs side by
// side. Gemini, OpenCode, Cline and Copilot pass it too (two at a time),
// but with all eight at once on a two-core machine Claude Code's shell
// gives up on its sleeping command (after 2 min) before the slowest of
// the others has called its tool, and its turn ends on worker A.
var retryEngines = []events.EngineType{events.EngineClaudeCode, events.EngineCodex, events.EnginePi, events.EngineQwen}

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

// installedOf returns those of types installed at their pinned version;
// under CI every one must be.
func installedOf(t *testing.T, setup *engines.Setup, types []events.EngineType) []events.EngineType {
	t.Helper()
	var ready []events.EngineType
	for _, e := range types {
		spec, _ := engines.Lookup(e)
		if v, err := spec.InstalledVersion(t.Context(), setup.Root()); err == nil && v == spec.Version {
			ready = append(ready, e)
		} else if os.Getenv("CI") == "true" {
			t.Fatalf("%s %s is not installed", e, spec.Version)
		}
	}
	return ready
}

// shell is a fakellm prompt that has the agent run command in its shell.
func shell(text, command string) string {
	return text + " @@SH:" + base64.RawURLEncoding.EncodeToString([]byte(command)) + "@@"
}

// TestPortableRuns runs each engine's chat on two workers that share
// nothing but the bus: turn 1 on worker A writes a file, A stops, and
// turn 2 on worker B resumes the engine session (the model request holds
// turn 1) and sees the file, from the snapshot A left, and writes another.
// A fork from turn 1's last message, on B, sees turn 1's file and not
// turn 2's, and its model request holds turn 1 and not turn 2.
func TestPortableRuns(t *testing.T) {
	setup, llm := engineSetup(t, events.EngineClaudeCode)
	ready := installedOf(t, setup, portableEngines)
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
		seconds[c.engine] = h.send(tn, c.session.ID, shell("Which word was it?", "cat notes.txt; echo two > second.txt")).RunID
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

	// A fork from turn 1, on B: turn 1's files and conversation only.
	forks := map[events.EngineType]string{}
	for _, c := range chats {
		var cps []events.Checkpoint
		h.must(events.OpCheckpoints, events.SessionRef{Caller: tn.Caller, SessionID: c.session.ID}, &cps)
		if len(cps) != 2 {
			t.Fatalf("%s: checkpoints = %+v, want turns 1 and 2", c.engine, cps)
		}
		var r events.StartTurnReply
		h.must(events.OpStart, events.StartTurnRequest{Caller: tn.Caller, SessionID: c.session.ID, ParentMessageID: cps[0].MessageID,
			Prompt: []events.Block{events.TextBlock{Text: shell("Fork "+c.word+": list the files.", "ls")}}}, &r)
		forks[c.engine] = r.RunID
	}
	for _, c := range chats {
		run := forks[c.engine]
		evs := c.feed.waitFor(t, 3*time.Minute, finished(run))
		r := h.waitRunState(tn, run, events.RunCompleted)
		if r.StartSnapshot != c.snapshot {
			t.Errorf("%s: the fork started from %q, want turn 1's %s", c.engine, r.StartSnapshot, c.snapshot)
		}
		out := h.runEventsOnBus(tn.TenantID, run)
		if !toolOutputHas(out, "notes.txt") || toolOutputHas(out, "second.txt") {
			t.Errorf("%s: the fork's `ls` should list notes.txt and not second.txt; events: %s", c.engine, summarize(evs))
		}
		if !turnCarried(llm.Requests(), "Fork "+c.word, "Remember the word "+c.word) {
			t.Errorf("%s: no model request of the fork carried turn 1's prompt", c.engine)
		}
		if turnCarried(llm.Requests(), "Fork "+c.word, "Which word was it?") {
			t.Errorf("%s: a model request of the fork carried turn 2, which is not on its branch", c.engine)
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

// killTree kills a process and every process below it at once, as the loss
// of its machine would.
func killTree(t *testing.T, pid int) {
	t.Helper()
	parent := map[int]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its ')'.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		child, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if len(fields) > 1 {
			parent[child], _ = strconv.Atoi(fields[1])
		}
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		for c, pp := range parent {
			if pp == tree[i] {
				tree = append(tree, c)
			}
		}
	}
	for _, p := range tree {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// waitRESTRun polls a run over the API until it is in state want. A run
// that ends in another state fails the test at once, with its error.
func waitRESTRun(t *testing.T, c *client.Client, run string, want events.RunStateName, d time.Duration) events.Run {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		r, err := c.Run(context.Background(), run)
		if err == nil && r.State == want {
			return r
		}
		if err == nil && r.State.Terminal() {
			t.Fatalf("run %s (%s, worker %q) ended %q (%s: %s), want %s", run, r.Engine, r.WorkerID, r.State, r.ErrorKind, r.Error, want)
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s (%s, worker %q) is %q (%v) after %s, want %s", run, r.Engine, r.WorkerID, r.State, err, d, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRetryLostRunOnAnotherWorker: for each of retryEngines that is
// installed (under CI every one must be), side by side,
// turn 1 on worker A writes a file; turn 2 starts
// on A, whose tool sleeps there, and A dies with everything it ran. The run
// becomes lost when its lease expires; POST /v1/runs/{id}/retry runs it
// again on worker B, from the snapshot turn 2 started from: B's model
// request carries turn 1 and the retried prompt once, and the retried tool
// reads turn 1's file on B.
func TestRetryLostRunOnAnotherWorker(t *testing.T) {
	setup, llm := engineSetup(t, events.EngineClaudeCode)
	ready := installedOf(t, setup, retryEngines)
	h := start(t, Config{NoWorkers: true})
	rootA, rootB := t.TempDir(), t.TempDir()
	a := h.spawnEngineWorker("worker-a", rootA, setup)
	h.waitEngines(ready)
	acct := h.account("retry")
	ctx := context.Background()
	me, err := acct.c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type chat struct {
		engine               events.EngineType
		session              string
		word, ask            string
		first, second, retry string
		turn1                events.Run
	}
	send := func(c *chat, text string) string {
		t.Helper()
		r, err := acct.c.SendMessage(ctx, c.session, api.SendMessage{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return r.RunID
	}
	var chats []*chat
	for _, e := range ready {
		s, err := acct.c.CreateSession(ctx, acct.project.ID, api.CreateSession{Engine: e})
		if err != nil {
			t.Fatal(err)
		}
		c := &chat{engine: e, session: s.ID, word: "PLUM-" + strings.ToUpper(string(e)), ask: "Which word was it, " + string(e) + "?"}
		c.first = send(c, shell("Remember the word "+c.word+".", "echo "+c.word+" > notes.txt"))
		chats = append(chats, c)
	}
	for _, c := range chats {
		c.turn1 = waitRESTRun(t, acct.c, c.first, events.RunCompleted, 2*time.Minute)
		if c.turn1.WorkerID != "worker-a" || c.turn1.Snapshot == nil {
			t.Fatalf("%s: turn 1 ran on %q and left snapshot %+v, want worker-a and one", c.engine, c.turn1.WorkerID, c.turn1.Snapshot)
		}
	}
	// Turn 2's tool sleeps in A's copy of the session, which alone has a
	// file that is in no snapshot, and reads notes.txt anywhere else. Codex
	// hands a command still running back to the model after 10 s (it goes
	// on in the background) and ends the turn, so its turn 2 starts last,
	// once every other engine's tool sleeps, and A dies within seconds of
	// its call; the others' tools sleep until the kill.
	slices.SortStableFunc(chats, func(x, y *chat) int {
		return cmp.Compare(boolInt(x.engine == events.EngineCodex), boolInt(y.engine == events.EngineCodex))
	})
	for _, c := range chats {
		wsA := filepath.Join(rootA, "workspaces", me.Tenant.ID, acct.project.ID, "sessions", c.session)
		if err := os.WriteFile(filepath.Join(wsA, "on-worker-a"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		c.second = send(c, shell(c.ask, `if [ -e on-worker-a ]; then sleep 600; fi; cat notes.txt`))
		deadline := time.Now().Add(2 * time.Minute)
		for !slices.ContainsFunc(h.runEventsOnBus(me.Tenant.ID, c.second), isToolUse) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: turn 2 never called its tool on worker A", c.engine)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	time.Sleep(time.Second) // the tools are running
	killed := time.Now()
	killTree(t, a.Process.Pid)
	_ = a.Wait()
	// B starts while A's leases run out.
	b := h.spawnEngineWorker("worker-b", rootB, setup)
	defer stopWorker(t, b)
	for _, c := range chats {
		lost := waitRESTRun(t, acct.c, c.second, events.RunLost, 60*time.Second)
		if lost.StartSnapshot != c.turn1.Snapshot.ID {
			t.Errorf("%s: turn 2 started from %q, want turn 1's %s", c.engine, lost.StartSnapshot, c.turn1.Snapshot.ID)
		}
	}
	t.Logf("turn 2 lost %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	for _, c := range chats {
		// A's heartbeat may be gone before B offers the engine: a client
		// asks again while no worker offers it.
		for {
			var r events.StartTurnReply
			r, err = acct.c.Retry(ctx, c.second)
			c.retry = r.RunID
			var apiErr *events.APIError
			if !errors.As(err, &apiErr) || apiErr.Code != "engine_unavailable" || time.Since(killed) > 2*time.Minute {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("%s: retry: %v", c.engine, err)
		}
		if again, err := acct.c.Retry(ctx, c.second); err != nil || again.RunID != c.retry {
			t.Errorf("%s: a second retry = %+v, %v; want the first, %s", c.engine, again, err, c.retry)
		}
	}
	for _, c := range chats {
		r := waitRESTRun(t, acct.c, c.retry, events.RunCompleted, 2*time.Minute)
		t.Logf("%s: the retry completed %s after the kill", c.engine, time.Since(killed).Round(100*time.Millisecond))
		if r.WorkerID != "worker-b" || r.RetryOf != c.second || r.StartSnapshot != c.turn1.Snapshot.ID {
			t.Errorf("%s: retry ran on %q, retryOf %q, from snapshot %q; want worker-b, %s, turn 1's %s",
				c.engine, r.WorkerID, r.RetryOf, r.StartSnapshot, c.second, c.turn1.Snapshot.ID)
		}
		ws := filepath.Join(rootB, "workspaces", me.Tenant.ID, acct.project.ID, "sessions", c.session)
		if got, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || strings.TrimSpace(string(got)) != c.word {
			t.Errorf("%s: notes.txt on worker B = %q, %v; want %s", c.engine, got, err, c.word)
		}
		if !toolOutputHas(h.runEventsOnBus(me.Tenant.ID, c.retry), c.word) {
			t.Errorf("%s: the retried tool on worker B did not print %s", c.engine, c.word)
		}
		// B's model requests: turn 1 is there, the retried prompt once.
		var carried bool
		for _, req := range llm.Requests() {
			if req.Time.Before(killed) {
				continue
			}
			n := 0
			for _, u := range req.UserTurns {
				if strings.Contains(u, c.ask) {
					n++
				}
			}
			if n > 1 {
				t.Errorf("%s: a model request of the retried turn carries its prompt %d times: %q", c.engine, n, req.UserTurns)
			}
			if n == 1 && slices.ContainsFunc(req.UserTurns, func(u string) bool { return strings.Contains(u, "Remember the word "+c.word) }) {
				carried = true
			}
		}
		if !carried {
			t.Errorf("%s: no model request of the retried turn carried turn 1: the engine session did not follow the chat", c.engine)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func isToolUse(env events.Envelope) bool {
	m, ok := env.Output.(events.AssistantMessage)
	return ok && slices.ContainsFunc(m.Content, func(b events.Block) bool { _, ok := b.(events.ToolUseBlock); return ok })
}
