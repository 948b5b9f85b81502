package engines

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/services/engine-worker/internal/engine"
)

// writeAgent installs s at its pinned version as a shell script.
func writeAgent(t *testing.T, root string, s Spec, script string) {
	t.Helper()
	bin := s.BinPath(root)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// A version command that does not answer in time is "not responding", not
// "not installed", and the advice is to wait, not to install; one that
// fails is a broken install.
func TestCheckTellsASlowEngineFromABrokenOne(t *testing.T) {
	tests := []struct {
		name    string
		give    string // the agent's script
		want    State
		wantMsg string
		notMsg  string
	}{
		{"answers", "echo 1.2.3", Ready, "is ready", ""},
		{"hangs", "exec sleep 60", NotResponding, "did not answer within 1s", "clopen engines install"},
		{"fails", "echo broken >&2; exit 3", NotInstalled, "does not run", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			s := fakeSpec(nil)
			writeAgent(t, root, s, tt.give)
			timeout := time.Second
			if tt.want != NotResponding {
				timeout = time.Minute // a busy machine must not make these time out
			}
			st := s.Check(context.Background(), Setup{EnginesDir: root, ProbeTimeout: timeout})
			if st.State != tt.want || !strings.Contains(st.Message, tt.wantMsg) || (tt.notMsg != "" && strings.Contains(st.Message, tt.notMsg)) {
				t.Errorf("Check = %+v, want state %s, message containing %q and not %q", st, tt.want, tt.wantMsg, tt.notMsg)
			}
		})
	}
}

// An engine left out at start because it did not answer is probed again
// and offered once it does.
func TestPendingOffersAnEngineOnceItAnswers(t *testing.T) {
	root := t.TempDir()
	slow, calls := filepath.Join(root, "slow"), filepath.Join(root, "calls")
	if err := os.WriteFile(slow, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s := fakeSpec(nil)
	// Every call is counted; while the marker exists the agent hangs.
	writeAgent(t, root, s, "echo x >> "+calls+"\nif [ -e "+slow+" ]; then exec sleep 60; fi\necho 1.2.3 '(Agent)'")
	setup := Setup{EnginesDir: root, ProbeTimeout: 2 * time.Second, Logger: logging.Discard()}
	if st := s.Check(context.Background(), setup); st.State != NotResponding {
		t.Fatalf("first check = %+v, want not responding", st)
	}
	p := &Pending{setup: setup, specs: []Spec{s}, states: []State{NotResponding}, first: 10 * time.Millisecond, last: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type offered struct {
		typ     events.EngineType
		version string
	}
	got := make(chan offered, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Watch(ctx, Changes{Offer: func(typ events.EngineType, _ engine.Factory, version string) { got <- offered{typ, version} }})
	}()
	// Let the watch probe (and fail) at least once more, then let it answer.
	deadline := time.Now().Add(time.Minute)
	for n := 0; n < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the engine was probed %d times, want a second probe", n)
		}
		time.Sleep(20 * time.Millisecond)
		b, _ := os.ReadFile(calls)
		n = strings.Count(string(b), "x")
	}
	if err := os.Remove(slow); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-got:
		if o.typ != s.Type || o.version != "1.2.3" {
			t.Errorf("offered %+v, want %s 1.2.3", o, s.Type)
		}
	case <-time.After(time.Minute):
		t.Fatal("the engine was never offered after it answered")
	}
	select {
	case <-done: // nothing left to watch
	case <-time.After(time.Minute):
		t.Fatal("Watch kept going with nothing pending")
	}
	if len(got) != 0 {
		t.Errorf("offered again: %+v", <-got)
	}
}

// Doctor's "ready" needs the model server to answer: a base URL on a dead
// port is reported with what to fix.
func TestDiagnoseChecksTheModelServer(t *testing.T) {
	root := t.TempDir()
	claude, _ := Lookup(events.EngineClaudeCode)
	writeAgent(t, root, claude, "echo "+ClaudeCodeVersion+" '(Claude Code)'")
	live, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + dead.Addr().String()
	dead.Close()
	tests := []struct {
		name    string
		give    string // the base URL
		want    State
		wantMsg string
	}{
		{"a server that answers", "http://" + live.Addr().String(), Ready, "is ready"},
		{"a dead port", deadURL, ModelUnreachable, "its model server " + deadURL + " does not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, st := range Diagnose(context.Background(), Setup{EnginesDir: root, LLMBaseURL: tt.give}) {
				if st.Engine != events.EngineClaudeCode {
					continue
				}
				if st.State != tt.want || !strings.Contains(st.Message, tt.wantMsg) ||
					(tt.want == ModelUnreachable && !strings.Contains(st.Message, "CLOPEN_LLM_BASE_URL")) {
					t.Errorf("claude-code = %+v, want %s with %q", st, tt.want, tt.wantMsg)
				}
			}
		})
	}
}

// A worker's start waits for no slow engine: Offer gives each version
// command the start-up limit, leaves one that has not answered by then
// pending as not responding, and the re-probe gets the full limit.
func TestOfferDoesNotWaitForASlowEngine(t *testing.T) {
	root := t.TempDir()
	s := fakeSpec(nil)
	writeAgent(t, root, s, "exec sleep 60")
	setup := Setup{EnginesDir: root, ProbeTimeout: time.Minute, StartupProbeTimeout: 500 * time.Millisecond, Logger: logging.Discard()}
	began := time.Now()
	factories, _, pending := offerOf(context.Background(), setup, []Spec{s})
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("Offer took %v with a hanging engine, want it bounded by the start-up limit", took)
	}
	if _, ok := factories[s.Type]; ok {
		t.Errorf("a hanging engine was offered")
	}
	if len(pending.specs) != 1 || pending.states[0] != NotResponding {
		t.Fatalf("pending = %v %v, want the engine, not responding", pending.specs, pending.states)
	}
	if got := pending.setup.probeTimeout(); got != time.Minute {
		t.Errorf("re-probes get %v, want the full probe timeout", got)
	}
}

// An engine offered at start whose install is removed is withdrawn, and
// offered again once it is reinstalled.
func TestPendingWithdrawsARemovedEngineAndOffersItsReinstall(t *testing.T) {
	root := t.TempDir()
	s := fakeSpec(nil)
	writeAgent(t, root, s, "echo 1.2.3 '(Agent)'")
	setup := Setup{EnginesDir: root, ProbeTimeout: 2 * time.Second, Logger: logging.Discard()}
	_, versions, p := offerOf(context.Background(), setup, []Spec{s})
	if versions[s.Type] != "1.2.3" {
		t.Fatalf("offered at start: %v", versions)
	}
	p.first, p.last = 10*time.Millisecond, 20*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan string, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Watch(ctx, Changes{
			Offer:    func(typ events.EngineType, _ engine.Factory, v string) { seen <- "offer " + string(typ) + " " + v },
			Withdraw: func(typ events.EngineType, why string) { seen <- "withdraw " + string(typ) + ": " + why },
			Unready: func(typ events.EngineType, st State, fix string) {
				seen <- "unready " + string(typ) + " " + string(st) + ": " + fix
			},
		})
	}()
	next := func(want string) {
		t.Helper()
		select {
		case got := <-seen:
			if !strings.HasPrefix(got, want) {
				t.Fatalf("got %q, want %q…", got, want)
			}
			t.Log(got)
		case <-time.After(30 * time.Second):
			t.Fatalf("no %q", want)
		}
	}
	select {
	case got := <-seen:
		t.Fatalf("%q while the engine is installed", got)
	case <-time.After(100 * time.Millisecond):
	}
	bin := s.BinPath(root)
	if err := os.RemoveAll(filepath.Dir(filepath.Dir(bin))); err != nil {
		t.Fatal(err)
	}
	next("withdraw codex: " + bin)
	next("unready codex not-installed: its install is gone")
	writeAgent(t, root, s, "echo 1.2.3 '(Agent)'")
	next("offer codex 1.2.3")
	cancel()
	<-done
}

// A worker learns why each engine it does not offer is not ready, and what
// would fix it, as soon as Watch starts: its heartbeat says so.
func TestPendingTellsWhyAnEngineIsNotOffered(t *testing.T) {
	root := t.TempDir()
	s := fakeSpec(nil) // nothing installed under root
	setup := Setup{EnginesDir: root, ProbeTimeout: 2 * time.Second, Logger: logging.Discard()}
	want := s.Check(context.Background(), setup)
	if want.State != NotInstalled || want.Message == "" {
		t.Fatalf("check = %+v, want not installed with a fix", want)
	}
	_, _, p := offerOf(context.Background(), setup, []Spec{s})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Watch(ctx, Changes{
			Offer:   func(events.EngineType, engine.Factory, string) {},
			Unready: func(typ events.EngineType, st State, fix string) { got <- string(typ) + " " + string(st) + ": " + fix },
		})
	}()
	select {
	case g := <-got:
		if w := string(s.Type) + " " + string(NotInstalled) + ": " + want.Message; g != w {
			t.Errorf("unready = %q, want %q", g, w)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Watch never said why the engine is not offered")
	}
	cancel()
	<-done
}
