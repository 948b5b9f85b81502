package codex

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"clopen.dev/pkg/events"
)

// Provider is the provider id messages carry.
const Provider = "openai"

// Converter turns the app-server notifications of one turn into engine
// outputs. It does no I/O: the same messages always give the same outputs
// (given Now), which the golden tests pin. It keeps what the contract needs
// across notifications: the engine session (the thread), the open text or
// reasoning stream, the tool calls already emitted (approvals may emit a
// call before its item starts), the token totals, and how the turn ended.
//
// The first output of a turn is its system_init. It waits for the MCP
// servers of MCPServers to report their start-up (codex starts them before
// its first model call) or for the turn's first other output.
//
// A Converter serves one turn and is not safe for concurrent use.
type Converter struct {
	// Model is the model the turn runs on; messages carry it.
	Model string
	// MCPServers are the names of the MCP servers the turn configured.
	MCPServers []string
	// Now stamps messages; nil means time.Now.
	Now func() time.Time

	thread   string
	turn     string
	initSent bool
	mcp      map[string]events.MCPStatus

	stream    *openStream
	texts     map[string]*strings.Builder // agent message text streamed so far, by item
	summaries map[string]int              // the last summary part streamed, by reasoning item
	emitted   map[string]bool             // tool_use ids already out
	answered  map[string]bool             // tool_result ids already out
	files     map[string][]toolUse        // a fileChange item's calls
	openMCP   []Item                      // MCP calls started, not completed
	plans     int
	parts     map[string]int

	seen, used tokenBreakdown // the thread's last total; what this turn's calls spent
	calls      int
	lastError  string
	ended      *turnEnd
	out        []events.Output
}

type openStream struct {
	item      string
	reasoning bool
}

// turnEnd is how the turn ended.
type turnEnd struct {
	status string
	err    *TurnError
}

// SetThread names the thread (the engine session) the turn runs in.
func (c *Converter) SetThread(id string) { c.thread = id }

// Thread is the thread the turn runs in.
func (c *Converter) Thread() string { return c.thread }

// Ended reports the turn's final status (completed, interrupted, failed)
// once turn/completed has been converted.
func (c *Converter) Ended() (status string, ok bool) {
	if c.ended == nil {
		return "", false
	}
	return c.ended.status, true
}

// Convert returns the outputs of one message, possibly none. Responses
// carrying a thread (thread/start, /resume, /fork) set the thread;
// notifications of other threads are ignored.
func (c *Converter) Convert(m Message) []events.Output {
	c.out = nil
	if m.IsResponse() {
		var r threadResult
		if json.Unmarshal(m.Result, &r) == nil && r.Thread.ID != "" {
			c.thread = r.Thread.ID
		}
		return nil
	}
	if m.Method == "" || m.IsRequest() || !c.mine(m.Params) {
		return nil
	}
	switch m.Method {
	case "turn/started":
		var p turnParams
		if json.Unmarshal(m.Params, &p) == nil {
			c.turn = p.Turn.ID
		}
	case "item/started":
		var p itemParams
		if json.Unmarshal(m.Params, &p) == nil {
			c.itemStarted(p.Item)
		}
	case "item/completed":
		var p itemParams
		if json.Unmarshal(m.Params, &p) == nil {
			c.itemCompleted(p.Item)
		}
	case "item/agentMessage/delta":
		var p deltaParams
		if json.Unmarshal(m.Params, &p) == nil {
			c.textDelta(p)
		}
	case "item/reasoning/summaryTextDelta":
		var p deltaParams
		if json.Unmarshal(m.Params, &p) == nil {
			c.reasoningDelta(p)
		}
	case "turn/plan/updated":
		var p planParams
		if json.Unmarshal(m.Params, &p) == nil {
			c.plan(p)
		}
	case "thread/tokenUsage/updated":
		var p tokenUsageParams
		if json.Unmarshal(m.Params, &p) == nil {
			c.tokens(p)
		}
	case "account/rateLimits/updated":
		var p rateLimitsParams
		if json.Unmarshal(m.Params, &p) == nil {
			c.rateLimits(p)
		}
	case "mcpServer/startupStatus/updated":
		var p mcpStartupParams
		if json.Unmarshal(m.Params, &p) == nil {
			c.mcpStatus(p)
		}
	case "error":
		var p errorParams
		if json.Unmarshal(m.Params, &p) == nil && !p.WillRetry {
			c.lastError = errorText(p.Error)
		} else if p.WillRetry && c.mine(m.Params) {
			c.add(events.Notification{SessionID: c.thread, Level: events.LevelWarning, Title: "Codex is retrying", Message: errorText(p.Error)})
		}
	case "warning":
		var p warningParams
		if json.Unmarshal(m.Params, &p) == nil && p.ThreadID != "" && p.Message != "" {
			c.add(events.Notification{SessionID: c.thread, Level: events.LevelWarning, Title: "Codex", Message: p.Message})
		}
	case "turn/completed":
		var p turnParams
		if json.Unmarshal(m.Params, &p) == nil {
			c.completed(p)
		}
	}
	return c.Take()
}

// mine reports whether a notification belongs to the turn's thread (or to
// no thread in particular).
func (c *Converter) mine(params json.RawMessage) bool {
	var p struct {
		ThreadID string `json:"threadId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	return p.ThreadID == "" || c.thread == "" || p.ThreadID == c.thread
}

// Known reports whether the converter or the run loop reads method; the
// others are logged once and ignored.
func Known(method string) bool {
	switch method {
	case "turn/started", "turn/completed", "item/started", "item/completed", "item/agentMessage/delta",
		"item/reasoning/summaryTextDelta", "item/reasoning/summaryPartAdded", "item/reasoning/textDelta",
		"item/commandExecution/outputDelta", "item/fileChange/outputDelta", "item/fileChange/patchUpdated",
		"item/mcpToolCall/progress", "turn/plan/updated", "turn/diff/updated", "thread/tokenUsage/updated",
		"account/rateLimits/updated", "mcpServer/startupStatus/updated", "error", "warning", "configWarning",
		"deprecationNotice", "thread/started", "thread/status/changed", "serverRequest/resolved",
		"remoteControl/status/changed", "thread/name/updated", "thread/settings/updated", "skills/changed":
		return true
	}
	return false
}

// Finish closes a stream left open (a turn that broke off).
func (c *Converter) Finish() []events.Output {
	c.out = nil
	c.closeStream()
	return c.Take()
}

// add appends outputs, the system_init first and the open stream closed
// before anything persisted.
func (c *Converter) add(outs ...events.Output) {
	c.init()
	for _, o := range outs {
		if events.IsPersisted(o) {
			c.closeStream()
		}
		c.out = append(c.out, o)
	}
}

// init emits the system_init once.
func (c *Converter) init() {
	if c.initSent {
		return
	}
	c.initSent = true
	servers := make([]events.MCPServer, 0, len(c.MCPServers))
	for _, name := range c.MCPServers {
		st, ok := c.mcp[name]
		if !ok {
			st = events.MCPPending
		}
		servers = append(servers, events.MCPServer{Name: name, Status: st})
	}
	c.out = append(c.out, events.SystemInit{SessionID: c.thread, Model: c.Model, Engine: events.EngineCodex,
		Tools: []string{}, MCPServers: servers})
}

func (c *Converter) mcpStatus(p mcpStartupParams) {
	if c.mcp == nil {
		c.mcp = map[string]events.MCPStatus{}
	}
	switch p.Status {
	case "ready":
		c.mcp[p.Name] = events.MCPConnected
	case "failed":
		c.mcp[p.Name] = events.MCPFailed
	case "cancelled":
		c.mcp[p.Name] = events.MCPDisconnected
	default:
		c.mcp[p.Name] = events.MCPPending
	}
	if c.initSent {
		return
	}
	for _, name := range c.MCPServers {
		if st, ok := c.mcp[name]; !ok || st == events.MCPPending {
			return
		}
	}
	c.init()
}

func (c *Converter) base(id string) events.MessageBase {
	if c.parts == nil {
		c.parts = map[string]int{}
	}
	n := c.parts[id]
	c.parts[id]++
	if n > 0 {
		id += ":" + strconv.Itoa(n)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	return events.MessageBase{CreatedAt: now().UTC(), MessageID: id, SessionID: c.thread,
		Engine: events.MessageEngine{Type: events.EngineCodex, Provider: Provider, Model: events.ModelRef{ID: c.Model}}}
}
