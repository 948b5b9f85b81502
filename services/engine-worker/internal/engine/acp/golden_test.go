package acp_test

import (
	"encoding/json"
	"flag"
	"strconv"
	"strings"
	"testing"
	"time"

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
	// The adapter emits the turn's system_init itself; the replay does not.
	enginetest.Golden(t, enginetest.Goldens{MinFiles: 20, Convert: replay, Update: *update,
		Check: func(name string, turn []events.Output) []error {
			typ := profileOf(name).Type
			init := events.SystemInit{SessionID: "s", Engine: typ}
			return enginetest.CheckTurn(typ, append([]events.Output{init}, turn...), enginetest.Complete(turn))
		}})
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
func replay(t *testing.T, name string, lines [][]byte) [][]events.Output {
	p := profileOf(name)
	var (
		turns    [][]events.Output
		cur      []events.Output
		conv     *acp.Converter
		promptID string
		servers  []string
		perms    = map[string]string{} // permission request id → tool call id
		kinds    = map[string]map[string]string{}
	)
	for _, line := range lines {
		var l wireLine
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("line %.80s: %v", line, err)
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
