package acp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
)

// fakeAgentEnv, when set, makes the test binary a scripted ACP agent
// (os/exec's helper-process pattern): fast, deterministic tests of the
// client's side of the protocol, without a real CLI.
const fakeAgentEnv = "CLOPEN_ACP_FAKE_AGENT"

// fakeAgent speaks ACP on stdin/stdout. The prompt's text picks the script:
//
//	fs <path>…        asks fs/read_text_file for each path (and writes
//	                  written.txt and ../escape.txt), then says what each
//	                  answer was, one line each
//	unknown           sends a session update of an unknown kind, then "ok"
//	plan              sends a plan, then "planned"
//	slow              sends "Hello", then waits for session/cancel and ends
//	                  the prompt cancelled
//	permission        asks permission for a shell call, then reports the
//	                  option chosen
//	anything else     says "echo: <text>"
func fakeAgent() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	var wmu sync.Mutex
	send := func(v any) {
		b, _ := json.Marshal(v)
		wmu.Lock()
		defer wmu.Unlock()
		os.Stdout.Write(append(b, '\n'))
	}
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	next := func() (msg, bool) {
		if !in.Scan() {
			return msg{}, false
		}
		var m msg
		_ = json.Unmarshal(in.Bytes(), &m)
		return m, true
	}
	nextID := 100
	// call sends a request and waits for its answer (the client sends
	// nothing else meanwhile in these scripts, except session/cancel).
	call := func(method string, params any) msg {
		nextID++
		send(map[string]any{"jsonrpc": "2.0", "id": nextID, "method": method, "params": params})
		for {
			m, ok := next()
			if !ok || m.Method == "" {
				return m
			}
		}
	}
	say := func(sid, text string) {
		send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": sid,
			"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}}}})
	}
	sessions := 0
	for {
		m, ok := next()
		if !ok {
			return
		}
		reply := func(result any) {
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
		}
		switch m.Method {
		case "initialize":
			reply(map[string]any{"protocolVersion": 1, "agentInfo": map[string]any{"name": "fake", "version": "1.0.0"},
				"agentCapabilities": map[string]any{"loadSession": false, "mcpCapabilities": map[string]any{"http": true}}})
		case "session/new":
			sessions++
			reply(map[string]any{"sessionId": fmt.Sprintf("fake-session-%d", sessions)})
		case "session/prompt":
			var p struct {
				SessionID string `json:"sessionId"`
				Prompt    []struct {
					Text string `json:"text"`
				} `json:"prompt"`
			}
			_ = json.Unmarshal(m.Params, &p)
			text := p.Prompt[0].Text
			f := strings.Fields(text)
			switch {
			case len(f) > 0 && f[0] == "fs":
				var lines []string
				for _, path := range f[1:] {
					r := call("fs/read_text_file", map[string]any{"sessionId": p.SessionID, "path": path})
					lines = append(lines, fmt.Sprintf("read %s: %s%s", path, r.Result, r.Error))
				}
				for _, path := range []string{"sub/written.txt", "../escape.txt"} {
					r := call("fs/write_text_file", map[string]any{"sessionId": p.SessionID, "path": path, "content": "x"})
					lines = append(lines, fmt.Sprintf("write %s: %s%s", path, r.Result, r.Error))
				}
				say(p.SessionID, strings.Join(lines, "\n"))
			case text == "unknown":
				send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": p.SessionID,
					"update": map[string]any{"sessionUpdate": "compaction_summary_chunk", "content": map[string]any{"type": "text", "text": "secret"}}}})
				say(p.SessionID, "ok")
			case text == "plan":
				send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": p.SessionID,
					"update": map[string]any{"sessionUpdate": "plan", "entries": []any{
						map[string]any{"content": "Read", "priority": "high", "status": "completed"},
						map[string]any{"content": "Write", "priority": "high", "status": "in_progress"}}}}})
				say(p.SessionID, "planned")
			case text == "slow":
				say(p.SessionID, "Hello")
				for {
					c, ok := next()
					if !ok || c.Method == "session/cancel" {
						break
					}
				}
				reply(map[string]any{"stopReason": "cancelled"})
				continue
			case text == "permission":
				r := call("session/request_permission", map[string]any{"sessionId": p.SessionID,
					"toolCall": map[string]any{"toolCallId": "call-1", "title": "ls", "kind": "execute", "rawInput": map[string]any{"command": "ls"}},
					"options": []any{map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
						map[string]any{"optionId": "no", "name": "Deny", "kind": "reject_once"}}})
				say(p.SessionID, "permission: "+string(r.Result))
			default:
				say(p.SessionID, "echo: "+text)
			}
			reply(map[string]any{"stopReason": "end_turn", "usage": map[string]any{"inputTokens": 3, "outputTokens": 2}})
		case "session/cancel":
		default:
			if len(m.ID) > 0 {
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "no " + m.Method}})
			}
		}
	}
}
