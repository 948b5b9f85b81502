package fakellm

import (
	"encoding/json"
	"regexp"
	"strings"
)

// format names a wire format; the names appear in the request log.
type format string

const (
	formatAnthropic format = "anthropic"
	formatChat      format = "chat"
	formatResponses format = "responses"
	formatGemini    format = "gemini"
	formatModels    format = "models"
	formatUnknown   format = "unknown"
)

// turn is what every request parser reduces a request to: the only facts the
// answer depends on.
type turn struct {
	model  string
	stream bool
	user   string   // text of the last user turn; markers are read here
	turns  []string // text of every user turn, oldest first (the history the client sent)
	result *string  // text of a tool result that follows that turn, nil if none
	// context is what the client put around the turns: the system prompt
	// and the hosts' <system-reminder> blocks (Messages API only).
	context []string
	tools   []tool // offered tools, in request order

	// toolSearch: the request offers a client-executed tool_search (Codex
	// defers MCP tools behind it; see responses_search.go).
	toolSearch bool
	// deferred: MCP tools a request names but does not offer, loaded
	// through the ToolSearch tool it offers (Claude Code).
	deferred []string

	promptBytes  int    // size of the request body, for the usage estimate
	workDir      string // the agent's working directory when the prompt names it
	includeUsage bool   // chat: stream_options.include_usage

	// jsonMode: the answer is a JSON document as text, because the request
	// asks for one (Gemini responseMimeType, Anthropic output_format, OpenAI
	// response_format or text.format) or its user turn quotes a JSON schema
	// to answer with (see promptSchema).
	jsonMode   bool
	jsonSchema json.RawMessage // the schema the JSON answer must fit; empty: any object
	// forceTool is a tool the answer must call with arguments that fit its
	// schema: the tool_choice of an Anthropic request, or the StructuredOutput
	// tool Claude Code offers for --json-schema.
	forceTool string
}

// structuredOutputTool is the tool Claude Code offers for --json-schema: the
// model's call to it is the structured output.
const structuredOutputTool = "StructuredOutput"

// promptSchemaRe finds a JSON schema quoted in a ```json fence after the
// words "JSON schema", as structured generation without a native JSON mode
// asks for one.
var promptSchemaRe = regexp.MustCompile("(?is)JSON schema.*?```json[ \t]*\r?\n(.*?)```")

// promptSchema returns the schema a user turn asks the answer to match, if
// it quotes one: an object with a type or properties.
func promptSchema(text string) (json.RawMessage, bool) {
	m := promptSchemaRe.FindStringSubmatch(text)
	if m == nil {
		return nil, false
	}
	raw := json.RawMessage(strings.TrimSpace(m[1]))
	s := decodeSchema(raw)
	if s == nil || (s["type"] == nil && s.props() == nil) {
		return nil, false
	}
	return raw, true
}

// jsonFormat is the structured-output request of the OpenAI and Anthropic
// APIs: {"type":"json_schema","schema":…} (Anthropic, Responses) or
// {"type":"json_schema","json_schema":{"schema":…}} (Chat), or
// {"type":"json_object"}.
type jsonFormat struct {
	Type       string          `json:"type"`
	Schema     json.RawMessage `json:"schema"`
	JSONSchema *struct {
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// apply sets t's JSON mode when f asks for JSON.
func (f *jsonFormat) apply(t *turn) {
	if f == nil || (f.Type != "json_schema" && f.Type != "json_object") {
		return
	}
	t.jsonMode, t.jsonSchema = true, f.Schema
	if f.JSONSchema != nil {
		t.jsonSchema = f.JSONSchema.Schema
	}
}

// tool is one tool the request offers the model.
type tool struct {
	name      string
	schema    json.RawMessage // JSON schema of the arguments; may be empty
	namespace string          // Responses: the namespace a searched-for tool is called in
}

// fullName is the tool's name with its namespace, as logs show it.
func (tl tool) fullName() string {
	if tl.namespace == "" {
		return tl.name
	}
	return strings.TrimRight(tl.namespace, "_") + "__" + tl.name
}

// userTurn records a user message. Empty text (such as a message that only
// carried images) leaves the previous turn in place.
func (t *turn) userTurn(text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	t.user, t.result = text, nil
	t.turns = append(t.turns, text)
}

// toolResult records a tool result that follows the current user turn.
func (t *turn) toolResult(text string) {
	t.result = &text
}

func (t turn) toolNames() []string {
	names := make([]string, 0, len(t.tools))
	for _, tl := range t.tools {
		names = append(names, tl.fullName())
	}
	return names
}

// textOf flattens the many content shapes the APIs use (a string, a list of
// blocks or parts, a block carrying text, content or output) into text.
func textOf(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	return flatten(v, 0)
}

func flatten(v any, depth int) string {
	if depth > 16 {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, e := range v {
			if s := flatten(e, depth+1); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	case map[string]any:
		for _, k := range []string{"text", "content", "output"} {
			if e, ok := v[k]; ok {
				return flatten(e, depth+1)
			}
		}
	}
	return ""
}

var workDirPatterns = []*regexp.Regexp{
	regexp.MustCompile(`Working directory: (/[^\s"\\<]+)`), // Claude Code's environment block
	regexp.MustCompile(`<cwd>(/[^<"\\]+)</cwd>`),           // Codex's environment_context
}

// guessWorkDir finds the agent's working directory in the prompt, so that a
// write tool that wants an absolute path gets one inside the workspace.
func guessWorkDir(body []byte) string {
	for _, re := range workDirPatterns {
		if m := re.FindSubmatch(body); m != nil {
			return string(m[1])
		}
	}
	return ""
}
