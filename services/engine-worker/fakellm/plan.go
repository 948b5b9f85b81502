package fakellm

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Fixed texts of the answers; tests and hosts match on them.
const (
	helloText        = "Hello from fakellm."
	thinkingText     = "The prompt asks fakellm for a scripted answer, so I will give one."
	thinkingSig      = "ZmFrZWxsbS1zaWduYXR1cmU=" // echoed back by clients on later turns
	toolResultPrefix = "Tool finished. Result: "
	maxResultQuote   = 2000 // bytes of the tool result quoted back
)

type stepKind int

const (
	thinkingStep stepKind = iota + 1
	textStep
	toolStep
	searchStep // Responses only: a client-executed tool_search call
)

// step is one content block of the answer.
type step struct {
	kind   stepKind
	deltas []string // thinkingStep, textStep: the text in the pieces it streams as
	tool   string   // toolStep: the offered tool's name
	ns     string   // toolStep: the tool's namespace (Responses), if any
	args   string   // toolStep, searchStep: arguments as a JSON object
	id     string   // toolStep: the call id, which each format prefixes its own way
}

func (s step) text() string { return strings.Join(s.deltas, "") }

// reply is the whole answer to one request, independent of the wire format.
type reply struct {
	steps        []step
	slow         bool // stall after the first text delta
	inputTokens  int
	outputTokens int
}

func (r reply) calledTool() bool {
	for _, s := range r.steps {
		if s.kind == toolStep {
			return true
		}
	}
	return false
}

// decide builds the answer for a turn.
func decide(t turn, m markers) reply {
	r := reply{slow: m.slow}
	switch {
	case t.jsonMode:
		r.steps = append(r.steps, textOnly(jsonText(t.jsonSchema, m)))
	case t.forceTool != "" && t.result == nil:
		r.steps = append(r.steps, forced(t))
	default:
		if m.think {
			r.steps = append(r.steps, step{kind: thinkingStep, deltas: words(thinkingText)})
		}
		r.steps = append(r.steps, answer(t, m)...)
	}
	r.inputTokens = max(1, t.promptBytes/4)
	out := 0
	for _, s := range r.steps {
		out += len(s.text()) + len(s.tool) + len(s.args)
	}
	r.outputTokens = max(1, (out+3)/4)
	return r
}

func answer(t turn, m markers) []step {
	if t.result != nil {
		return []step{textOnly(toolResultPrefix + quote(*t.result))}
	}
	switch {
	case m.mcpAsk:
		if tl, ok := findMCPAsk(t.tools); ok {
			return call("I need to ask you something.", tl, askArgs(decodeSchema(tl.schema)))
		}
		if t.toolSearch {
			return []step{textOnly("Searching for the ask_user tool."), {kind: searchStep, args: `{"query":"ask_user","limit":8}`, id: newID("")}}
		}
		if st, ok := selectDeferred(t, func(n string) bool { _, ok := findMCPAsk([]tool{{name: n}}); return ok }); ok {
			return st
		}
		return missing("MCP ask_user tool", t)
	case m.ask:
		if tl, ok := findTool(t.tools, askTools); ok {
			return call("I need to ask you something.", tl, askArgs(decodeSchema(tl.schema)))
		}
		return missing("ask-the-user tool", t)
	case m.mcp:
		if tl, ok := findEchoTool(t.tools); ok {
			return call("Calling the echo tool.", tl, echoArgs(decodeSchema(tl.schema)))
		}
		if t.toolSearch {
			return []step{textOnly("Searching for the echo tool."), {kind: searchStep, args: `{"query":"echo","limit":8}`, id: newID("")}}
		}
		if st, ok := selectDeferred(t, func(n string) bool { return strings.Contains(strings.ToLower(n), "echo") }); ok {
			return st
		}
		return missing("echo tool", t)
	case m.write:
		if tl, ok := findTool(t.tools, writeTools); ok {
			return call("Writing a file.", tl, writeArgs(decodeSchema(tl.schema), t.workDir))
		}
		if tl, ok := findTool(t.tools, shellTools); ok {
			return call("Running a command.", tl, shellArgs(decodeSchema(tl.schema)))
		}
		return missing("write-file or shell tool", t)
	case m.shell != "":
		if tl, ok := findTool(t.tools, shellTools); ok {
			return call("Running a command.", tl, shellArgsFor(decodeSchema(tl.schema), m.shell))
		}
		return missing("shell tool", t)
	case m.tool:
		if tl, ok := findTool(t.tools, shellTools); ok {
			return call("Running a command.", tl, shellArgs(decodeSchema(tl.schema)))
		}
		return missing("shell tool", t)
	case m.deltas > 0:
		return []step{{kind: textStep, deltas: numbered(m.deltas)}}
	}
	return []step{textOnly(helloText)}
}

// selectDeferred calls ToolSearch to load the first deferred tool whose
// name matches; false when none does.
func selectDeferred(t turn, match func(name string) bool) ([]step, bool) {
	for _, n := range t.deferred {
		if match(n) {
			return call("Loading the "+n+" tool.", tool{name: toolSearchTool}, map[string]any{"query": "select:" + n}), true
		}
	}
	return nil, false
}

func call(intro string, tl tool, args map[string]any) []step {
	b, err := json.Marshal(args)
	if err != nil { // only plain values go in; kept for safety
		b = []byte("{}")
	}
	return []step{textOnly(intro), {kind: toolStep, tool: tl.name, ns: tl.namespace, args: string(b), id: newID("")}}
}

func missing(what string, t turn) []step {
	names := t.toolNames()
	if len(names) > 40 {
		names = append(names[:40], "…")
	}
	list := "none"
	if len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	return []step{textOnly(fmt.Sprintf("fakellm: no %s is offered (tools: %s).", what, list))}
}

func textOnly(s string) step { return step{kind: textStep, deltas: words(s)} }

// jsonAnswer is a JSON object that fits the request's response schema.
func jsonAnswer(raw json.RawMessage) string {
	v := decodeSchema(raw).example(0)
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// jsonText is a JSON answer in text: the document, in a fence with prose
// around it for @@JSON_FENCED@@, cut in half for @@JSON_TRUNCATED@@.
func jsonText(schema json.RawMessage, m markers) string {
	doc := jsonAnswer(schema)
	if m.jsonTruncated {
		doc = doc[:len(doc)/2]
	}
	if m.jsonFenced {
		return "Here is the JSON you asked for:\n```json\n" + doc + "\n```\nLet me know if you need changes."
	}
	return doc
}

// forced calls the tool the request forces, with arguments built from its
// schema; a forced tool the request does not offer is answered in text.
func forced(t turn) step {
	tl, ok := findTool(t.tools, []string{t.forceTool})
	if !ok {
		return textOnly(fmt.Sprintf("fakellm: the forced tool %s is not offered.", t.forceTool))
	}
	args := jsonAnswer(tl.schema)
	if !strings.HasPrefix(args, "{") {
		args = "{}" // tool arguments are an object, whatever the schema says
	}
	return step{kind: toolStep, tool: tl.name, args: args, id: newID("")}
}

// quote trims a tool result and cuts it at maxResultQuote bytes on a rune boundary.
func quote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxResultQuote {
		return s
	}
	cut := maxResultQuote
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// words splits s after each space, so that the deltas join back to s.
func words(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	if len(out) == 0 {
		out = []string{""}
	}
	return out
}

// numbered gives n deltas of 6 bytes: "00001 ", "00002 ", …
func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%05d ", (i+1)%100000)
	}
	return out
}

// pieces cuts s into about n parts on rune boundaries, for streamed tool arguments.
func pieces(s string, n int) []string {
	size := max(1, len(s)/n)
	var out []string
	for len(s) > size {
		cut := size
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}

func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b)
}
