package acp_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// FuzzDecodeFrame feeds arbitrary lines to the frame decoder and, for
// session/update and permission requests, to the converter of every
// profile: nothing may panic, and whatever the converter emits must
// encode. The seed corpus is every line the agents wrote in testdata's
// transcripts plus the committed corpus in testdata/fuzz.
func FuzzDecodeFrame(f *testing.F) {
	enginetest.TranscriptLines(f, func(line []byte) {
		if !bytes.HasPrefix(line, []byte(`{"_sent"`)) {
			f.Add(line)
		}
	})
	profiles := []*acp.Profile{&acp.Gemini, &acp.Qwen, &acp.Copilot, &acp.OpenCode, &acp.Cline, &acp.Cursor, acp.Custom(acp.CustomConfig{Command: "x"})}
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := acp.DecodeFrame(line)
		if err != nil {
			return
		}
		if fr.Kind() == 0 {
			t.Fatalf("DecodeFrame(%s) accepted a frame of no kind", line)
		}
		for _, p := range profiles {
			c := &acp.Converter{Profile: p, SessionID: "s", Base: "b", MCPServers: []string{"probe"}}
			var outs []events.Output
			switch fr.Method {
			case "session/update":
				var n acp.SessionNotification
				if json.Unmarshal(fr.Params, &n) != nil {
					return
				}
				u, err := acp.DecodeUpdate(n.Update)
				if err != nil {
					return
				}
				outs = append(outs, c.Update(u)...)
			case "session/request_permission":
				var r acp.PermissionRequest
				if json.Unmarshal(fr.Params, &r) != nil {
					return
				}
				o, _, input, _ := c.Permission(r.ToolCall, r.Options)
				if !json.Valid(input) {
					t.Fatalf("Permission(%s) gave invalid input %s", line, input)
				}
				outs = append(outs, o...)
				outs = append(outs, c.Denied(r.ToolCall.ToolCallID, "no")...)
			}
			var r acp.PromptResponse
			_ = json.Unmarshal(fr.Result, &r)
			outs = append(outs, c.End(r)...)
			for _, o := range outs {
				if _, err := events.EncodeOutput(o); err != nil {
					t.Fatalf("converting %s gave an output that does not encode: %v", line, err)
				}
			}
		}
	})
}

// FuzzCatalog feeds arbitrary session/new answers to Catalog for every
// profile: nothing may panic, every entry must encode with the profile's
// engine, ids must be unique per provider, and an answer the agent gave
// with a configured model is never an empty catalog. The seed corpus is
// every session/new answer in testdata's transcripts.
func FuzzCatalog(f *testing.F) {
	enginetest.TranscriptLines(f, func(data []byte) {
		var line struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(data, &line) == nil && bytes.Contains(line.Result, []byte(`"sessionId"`)) {
			f.Add([]byte(line.Result))
		}
	})
	profiles := []*acp.Profile{&acp.Gemini, &acp.Qwen, &acp.Copilot, &acp.OpenCode, &acp.Cline, &acp.Cursor, acp.Custom(acp.CustomConfig{Command: "x"})}
	f.Fuzz(func(t *testing.T, answer []byte) {
		var r acp.NewSessionResponse
		if json.Unmarshal(answer, &r) != nil {
			return
		}
		for _, p := range profiles {
			models := acp.Catalog(p, r, "configured")
			if len(models) == 0 {
				t.Fatalf("%s: Catalog(%s) is empty", p.Type, answer)
			}
			seen := map[string]bool{}
			for _, m := range models {
				if m.Engine != p.Type || seen[m.ID+"@"+m.Provider] {
					t.Fatalf("%s: entry %+v: wrong engine or a duplicate", p.Type, m)
				}
				seen[m.ID+"@"+m.Provider] = true
				if _, err := m.MarshalJSON(); err != nil {
					t.Fatalf("%s: entry %+v does not encode: %v", p.Type, m, err)
				}
			}
		}
	})
}
