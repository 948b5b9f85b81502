package enginetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Recording is one transcript Record makes: the turns of one chat on one
// engine instance.
type Recording struct {
	Name  string
	Turns []string // "+" before a prompt resumes the previous turn's session
	Deny  bool     // refuse every permission prompt
	MCP   bool     // offer the sandbox's echo MCP server
	// InterruptAfterDelta interrupts the first turn at its first text delta.
	InterruptAfterDelta bool
}

// Recordings are the transcripts every adapter records; each adds its own
// (questions, MCP calls, long answers) where its CLI supports them.
func Recordings(extra ...Recording) []Recording {
	return append([]Recording{
		{Name: "hello", Turns: []string{"Say hello."}},
		{Name: "think-tool", Turns: []string{"@@THINK@@ @@TOOL@@ Think, then run the command."}},
		{Name: "deny", Turns: []string{"@@TOOL@@ Run the command."}, Deny: true},
		{Name: "interrupt", Turns: []string{"@@SLOW@@ Tell me a story.", "+Say hello again."}, InterruptAfterDelta: true},
		{Name: "error", Turns: []string{"@@ERROR@@ Fail."}},
		{Name: "resume", Turns: []string{"Remember APPLE-7.", "+Which word?"}},
	}, extra...)
}

// Recording extras the adapters share.
var (
	RecordAsk = Recording{Name: "ask", Turns: []string{"@@ASK@@ Ask me."}}
	RecordMCP = Recording{Name: "mcp", Turns: []string{"@@MCP@@ Call the echo tool."}, MCP: true}
)

// RecordLong is a recording of one long streamed answer of n deltas.
func RecordLong(n int) Recording {
	return Recording{Name: "long", Turns: []string{fmt.Sprintf("@@TEXT:%d@@ Stream a lot.", n)}}
}

// RecordSpec is how Record drives one CLI.
type RecordSpec struct {
	// New returns the engine to record, with tap as its Config.Tap and
	// state as its StateDir.
	New   func(tap func(sent bool, line []byte), state string) engine.Engine
	Model string
	// Prefix goes before each recording's name in testdata/<prefix><name>.jsonl.
	Prefix string
	// Request, when set, adds what the adapter needs beyond the common fields.
	Request func(*engine.Request)
	// TurnTimeout bounds each turn (0: none).
	TurnTimeout time.Duration
	// Settle is a pause after each turn for the late lines of a process
	// that is being retired.
	Settle time.Duration
}

// Record runs each recording on the pinned CLI against sb's fakellm and
// writes its transcript to testdata: every JSON line the CLI printed, and
// every line the adapter wrote as {"_sent": line}, as in the reference
// captures. Temporary paths and fakellm's address are replaced, so that
// recordings are stable enough to review. RECORD_CASE=<name> (without the
// prefix) records one.
// The adapters' golden tests call it under -record:
//
//	go test ./internal/engine/<adapter> -run TestConvertGolden -record -update
func Record(t *testing.T, sb *Sandbox, spec RecordSpec, recs []Recording) {
	for _, r := range recs {
		if only := os.Getenv("RECORD_CASE"); only != "" && only != r.Name {
			continue
		}
		t.Run(r.Name, func(t *testing.T) {
			var tr transcript
			state := t.TempDir()
			e := spec.New(tr.tap, state)
			if d, ok := e.(engine.Disposer); ok {
				defer d.Dispose(context.Background())
			}
			ws, chat, resume := t.TempDir(), uuid.NewString(), ""
			var mcp []engine.MCPServer
			if r.MCP {
				mcp = []engine.MCPServer{{Name: "probe", URL: sb.MCPEcho(t)}}
			}
			for i, prompt := range r.Turns {
				if prompt[0] == '+' {
					prompt = prompt[1:]
				} else {
					resume = ""
				}
				rec := NewRecorder()
				rec.Answers = map[string]string{"Which option?": "Alpha"}
				if r.Deny {
					rec.Decide = DenyAll
				}
				base, cancel := context.Background(), context.CancelFunc(func() {})
				if spec.TurnTimeout > 0 {
					base, cancel = context.WithTimeout(context.Background(), spec.TurnTimeout)
				}
				ctx, stop := context.WithCancelCause(base)
				if r.InterruptAfterDelta && i == 0 {
					go func() { <-rec.FirstDelta(); stop(engine.ErrInterrupted) }()
				}
				req := engine.Request{Tenant: "t", RunID: uuid.NewString(), SessionID: chat, Workspace: ws,
					Prompt: []events.Block{events.TextBlock{Text: prompt}}, Model: spec.Model, ResumeSessionID: resume,
					Interaction: rec, MCPServers: mcp}
				if spec.Request != nil {
					spec.Request(&req)
				}
				err := e.Run(ctx, req, rec.Emit)
				stop(nil)
				cancel()
				t.Logf("turn %d: %v", i, err)
				if outs := rec.Outputs(); len(outs) > 0 {
					if res, ok := outs[len(outs)-1].(events.Result); ok {
						resume = res.SessionID
					}
				}
				time.Sleep(spec.Settle)
			}
			b, dropped := tr.scrubbed(ws, state, sb.BaseURL)
			if dropped > 0 {
				t.Logf("%d stdout lines were not JSON and are not in the transcript", dropped)
			}
			if err := os.WriteFile(filepath.Join("testdata", spec.Prefix+r.Name+".jsonl"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// transcript is what a recording's tap collected.
type transcript struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	dropped int
}

func (tr *transcript) tap(sent bool, line []byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	line = bytes.TrimSpace(line)
	switch {
	case !json.Valid(line):
		tr.dropped++
	case sent:
		tr.buf.WriteString(`{"_sent": ` + string(line) + "}\n")
	default:
		tr.buf.Write(line)
		tr.buf.WriteByte('\n')
	}
}

// scrubbed returns the transcript with the workspace, the state directory
// and fakellm's address replaced by stable names.
func (tr *transcript) scrubbed(ws, state, baseURL string) ([]byte, int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	b := bytes.ReplaceAll(tr.buf.Bytes(), []byte(ws), []byte("/workspace"))
	b = bytes.ReplaceAll(b, []byte(state), []byte("/state"))
	return bytes.ReplaceAll(b, []byte(baseURL), []byte("http://fakellm")), tr.dropped
}
