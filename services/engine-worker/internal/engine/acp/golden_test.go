package acp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

var update = flag.Bool("update", false, "rewrite the golden files of the converter tests")

// fixedNow stamps converted messages, so goldens are stable.
var fixedNow = func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

// TestConvertGolden replays every transcript in testdata (the reference
// captures, capture-*.jsonl, and recordings of the pinned agents against
// fakellm, record-<agent>-*.jsonl) through the converter as the adapter
// drives it, and compares the outputs with testdata/<name>.golden.json.
// Every complete turn must also obey the event contract's structural rules.
func TestConvertGolden(t *testing.T) {
	if *record {
		t.Run("record", recordTranscripts)
	}
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) < 20 {
		t.Fatalf("found %d transcripts in testdata, want the captures and the recordings", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			p := profileOf(name)
			turns := replay(t, p, file)
			if len(turns) == 0 {
				t.Fatal("no turn in the transcript")
			}
			var got []json.RawMessage
			for i, turn := range turns {
				complete := len(turn) > 0 && turn[len(turn)-1].OutputType() == events.TypeResult
				init := events.SystemInit{SessionID: "s", Engine: p.Type}
				for _, err := range enginetest.CheckTurn(p.Type, append([]events.Output{init}, turn...), complete) {
					t.Errorf("turn %d: %v", i, err)
				}
				for _, o := range turn {
					b, err := events.EncodeOutput(o)
					if err != nil {
						t.Fatalf("encode %s: %v", o.OutputType(), err)
					}
					got = append(got, b)
				}
			}
			gotJSON, _ := json.MarshalIndent(got, "", "  ")
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, append(gotJSON, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestConvertGolden -update)", err)
			}
			if diff := cmp.Diff(strings.TrimSpace(string(want)), strings.TrimSpace(string(gotJSON))); diff != "" {
				t.Errorf("outputs differ from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// profileOf picks the profile of a transcript by its name; the Claude and
// Codex adapters' captures run as operator-configured agents.
func profileOf(name string) *acp.Profile {
	for typ, p := range acp.Profiles {
		if strings.HasPrefix(name, "capture-"+string(typ)) || strings.HasPrefix(name, "record-"+string(typ)+"-") {
			return p
		}
	}
	return acp.Custom(acp.CustomConfig{Command: strings.TrimPrefix(name, "capture-")})
}

// wireLine is any line of a transcript.
type wireLine struct {
	Sent   *acp.Frame `json:"_sent"`
	ID     json.RawMessage
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *acp.RPCError   `json:"error"`
}

// replay drives a converter through a transcript as the adapter does: a
// turn runs from a session/prompt the client sent to the agent's response
// to it; updates in between are converted, permission requests folded in
// and, when the client rejected one, the call's refusal recorded. It
// returns one []Output per turn (without the adapter's system_init).
func replay(t *testing.T, p *acp.Profile, file string) [][]events.Output {
	t.Helper()
	name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var (
		turns    [][]events.Output
		cur      []events.Output
		conv     *acp.Converter
		promptID string
		servers  []string
		perms    = map[string]string{} // permission request id → tool call id
		kinds    = map[string]map[string]string{}
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var l wireLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %.80s: %v", sc.Bytes(), err)
		}
		if s := l.Sent; s != nil {
			switch {
			case s.Method == "session/new" || s.Method == "session/load":
				var params struct {
					MCPServers []struct {
						Name string `json:"name"`
					} `json:"mcpServers"`
				}
				_ = json.Unmarshal(s.Params, &params)
				servers = nil
				for _, m := range params.MCPServers {
					servers = append(servers, m.Name)
				}
			case s.Method == "session/prompt":
				if strings.HasSuffix(name, "-mcp") && len(servers) == 0 {
					// The recordings' MCP server; Cline gets it through its
					// settings file, so its session/new does not name it.
					servers = []string{"probe"}
				}
				var params struct {
					SessionID string `json:"sessionId"`
				}
				_ = json.Unmarshal(s.Params, &params)
				promptID = string(s.ID)
				conv = &acp.Converter{Profile: p, SessionID: params.SessionID, Model: "m", Base: "turn" + strconv.Itoa(len(turns)),
					MCPServers: servers, Now: fixedNow}
			case s.Method == "" && conv != nil && perms[string(s.ID)] != "":
				var res struct {
					Outcome struct {
						Outcome  string `json:"outcome"`
						OptionID string `json:"optionId"`
					} `json:"outcome"`
				}
				_ = json.Unmarshal(s.Result, &res)
				if k := kinds[string(s.ID)][res.Outcome.OptionID]; strings.HasPrefix(k, "reject") {
					cur = append(cur, conv.Denied(perms[string(s.ID)], "denied")...)
				}
				delete(perms, string(s.ID))
			}
			continue
		}
		if conv == nil {
			continue // before the first prompt: initialize, session/new, a load's replay
		}
		switch {
		case l.Method == "session/update":
			var n acp.SessionNotification
			if json.Unmarshal(l.Params, &n) != nil {
				continue
			}
			u, err := acp.DecodeUpdate(n.Update)
			if err != nil {
				t.Fatalf("update %s: %v", n.Update, err)
			}
			cur = append(cur, conv.Update(u)...)
		case l.Method == "session/request_permission":
			var r acp.PermissionRequest
			if err := json.Unmarshal(l.Params, &r); err != nil {
				t.Fatal(err)
			}
			outs, _, _, _ := conv.Permission(r.ToolCall, r.Options)
			cur = append(cur, outs...)
			perms[string(l.ID)] = r.ToolCall.ToolCallID
			kinds[string(l.ID)] = map[string]string{}
			for _, o := range r.Options {
				kinds[string(l.ID)][o.OptionID] = o.Kind
			}
		case l.Method == "" && string(l.ID) == promptID:
			if l.Error != nil {
				cur = append(cur, conv.Failed(l.Error.Error())...)
			} else {
				var r acp.PromptResponse
				if err := json.Unmarshal(l.Result, &r); err != nil {
					t.Fatal(err)
				}
				cur = append(cur, conv.End(r)...)
			}
			turns = append(turns, cur)
			cur, conv, promptID = nil, nil, ""
		}
	}
	if len(cur) > 0 {
		turns = append(turns, cur)
	}
	return turns
}
