package events

import (
	"encoding/json"
	"time"
)

// The expected values of the golden files: testdata/<dir>/<name>.json holds
// the canonical encoding of each, indented.

var (
	t0 = time.Date(2026, 5, 1, 12, 30, 45, 123456789, time.UTC)
	t1 = time.Date(2026, 5, 1, 12, 30, 46, 0, time.UTC)
)

func claudeEngine() MessageEngine {
	return MessageEngine{
		Type:            EngineClaudeCode,
		Provider:        "anthropic",
		Model:           ModelRef{ID: "claude-sonnet-4-5", Name: "Claude Sonnet 4.5"},
		Account:         AccountRef{ID: "acc-1", Name: "Work"},
		ReasoningEffort: "high",
	}
}

func base(id, session string) MessageBase {
	return MessageBase{CreatedAt: t0, MessageID: id, SessionID: session, Engine: claudeEngine()}
}

func bashCall() ToolUseBlock {
	return ToolUseBlock{
		ID:    "toolu_01",
		Name:  string(ToolBash),
		Input: json.RawMessage(`{"command":"go test ./... 2>&1 | head -n 5","description":"Run the tests"}`),
	}
}

var goldenOutputs = map[string]Output{
	"user": UserMessage{
		MessageBase: MessageBase{CreatedAt: t0, MessageID: "m-user-1", Engine: MessageEngine{Type: EngineCodex, Provider: "openai", Model: ModelRef{ID: "gpt-5-codex"}}},
		Sender:      Sender{ID: "u-1", Name: "Ada"},
		Content: []Block{
			TextBlock{Text: "Why does <Parse> fail for a && b?"},
			ImageBlock{MediaType: "image/png", Data: "iVBORw0KGgo="},
			DocumentBlock{MediaType: "application/pdf", Data: "JVBERi0=", Title: "spec.pdf"},
		},
	},
	"user_tool_result": UserMessage{
		MessageBase: base("m-user-2", "sess-A"),
		Content:     []Block{ToolResultBlock{ToolUseID: "toolu_01", Content: "ok  clopen.dev/pkg/events", IsError: false}},
		Synthetic:   true,
	},
	"assistant": AssistantMessage{
		MessageBase: base("msg_01", "sess-A"),
		Content:     []Block{TextBlock{Text: "Running the tests."}, bashCall()},
		StopReason:  StopToolUse,
		Usage:       &TokenUsage{InputTokens: 1200, OutputTokens: 85, CacheCreationInputTokens: 300, CacheReadInputTokens: 9000},
	},
	"assistant_child": AssistantMessage{
		MessageBase: MessageBase{
			CreatedAt: t1, MessageID: "msg_02:1", SessionID: "sess-A",
			Parent: Parent{MessageID: "msg_01", SessionID: "sess-A", ToolUseID: "toolu_agent"},
			Engine: MessageEngine{Type: EngineClaudeCode, Provider: "anthropic", Model: ModelRef{ID: "claude-haiku-4-5"}},
		},
		Content: []Block{TextBlock{Text: "Found 3 call sites."}},
	},
	"reasoning": ReasoningMessage{MessageBase: base("msg_01:r", "sess-A"), Text: "The failure is in the tokenizer."},
	"compact_boundary": CompactBoundary{
		MessageBase: base("cb-1", "sess-A"), Trigger: TriggerAuto, PreTokens: 187000,
	},
	"stream_event_start":  StreamEvent{Event: StreamStart, SessionID: "sess-A", Reasoning: true},
	"stream_event_delta":  StreamEvent{Event: StreamDelta, SessionID: "sess-A", Text: "Let me look at "},
	"stream_event_stop":   StreamEvent{Event: StreamStop, SessionID: "sess-A", Reasoning: true},
	"result_success":      Result{Subtype: ResultSuccess, SessionID: "sess-A", NumTurns: 3, TotalCostUSD: 0.0421, Usage: TokenUsage{InputTokens: 5000, OutputTokens: 700}, StopReason: "end_turn"},
	"result_success_null": Result{Subtype: ResultSuccess, SessionID: "sess-B", NumTurns: 1},
	"result_error_max_turns": Result{
		Subtype: ResultErrorMaxTurns, SessionID: "sess-A", Errors: []string{"reached max turns (8)"},
	},
	"result_error_during_execution": Result{
		Subtype: ResultErrorDuringExecution, SessionID: "sess-A", Errors: []string{"API Error: 529 overloaded", "retry budget exhausted"},
	},
	"result_error_max_budget": Result{Subtype: ResultErrorMaxBudget, SessionID: "sess-A"},
	"system_init": SystemInit{
		SessionID: "sess-A", Model: "claude-sonnet-4-5", Engine: EngineClaudeCode,
		Tools: []string{"Bash", "Read", "mcp__clopen__ask"},
		MCPServers: []MCPServer{
			{Name: "clopen", Status: MCPConnected},
			{Name: "github", Status: MCPNeedsAuth},
			{Name: "broken", Status: MCPFailed},
		},
	},
	"rate_limit": RateLimit{
		SessionID: "sess-A", Status: RateLimitAllowedWarning, Utilization: 0.92,
		ResetsAt: 1777777777, RateLimitType: RateLimitFiveHour,
	},
	"rate_limit_rejected": RateLimit{SessionID: "sess-A", Status: RateLimitRejected, Utilization: 1},
	"notification": Notification{
		SessionID: "sess-A", Level: LevelWarning, Title: "Fallback model", Message: "Switched to claude-haiku-4-5.",
	},
	"run_state":            RunState{State: RunFailed, Reason: "engine-exit", Error: "claude exited with status 1", ErrorKind: KindCrashed},
	"run_state_cancelling": RunState{State: RunCancelling, Reason: "user"},
	"run_state_running":    RunState{State: RunRunning, ArtifactRevision: 3, ReasoningEffort: ptr("high")},
	"run_state_no_effort":  RunState{State: RunRunning, ReasoningEffort: ptr("")},
	"run_state_metered": RunState{State: RunCompleted,
		MeteredUsage: &TokenUsage{InputTokens: 1200, OutputTokens: 340, CacheCreationInputTokens: 50, CacheReadInputTokens: 9000}},
	"usage_proxy":  RunUsage{Source: UsageFromProxy, Usage: TokenUsage{InputTokens: 5200, OutputTokens: 410, CacheReadInputTokens: 18000}, CostUSD: 0.0312},
	"usage_engine": RunUsage{Source: UsageFromEngine, Usage: TokenUsage{InputTokens: 1000, OutputTokens: 100}},
	"run_state_budget": RunState{State: RunFailed, Reason: "budget", ErrorKind: KindBudgetExhausted,
		Error: "the tenant's budget of 5,000 tokens per day (UTC) was reached: 5,310 tokens spent since 2025-06-01T00:00:00Z; it resets at 2025-06-02T00:00:00Z"},
	"run_state_snapshot": RunState{State: RunCompleted, Snapshot: &RunSnapshot{ID: "3f9a", Files: 12, Bytes: 40960, Uploaded: 812,
		Changes: []FileChange{{Path: "src/main.go", Kind: FileChanged, LinesAdded: 3, LinesRemoved: 1},
			{Path: "logo.png", Kind: FileAdded, Binary: true}, {Path: "old.txt", Kind: FileDeleted, LinesRemoved: 4}}}},
	"run_state_snapshot_failed": RunState{State: RunFailed, Error: "boom", ErrorKind: KindProvider,
		Snapshot: &RunSnapshot{Changes: []FileChange{}, Error: "the session's files were not saved: store unavailable"}},
	"unknown": Unknown{
		Type: "tool_progress",
		Raw:  json.RawMessage(`{"type":"tool_progress","sessionId":"sess-A","toolUseId":"toolu_01","elapsed":1.50,"note":"<b>&</b>","nested":{"a":[1,null,"x"]}}`),
	},
}

var goldenBlocks = map[string]Block{
	"text":              TextBlock{Text: "hello"},
	"image":             ImageBlock{MediaType: "image/jpeg", Data: "/9j/4AAQ"},
	"document":          DocumentBlock{MediaType: "application/pdf", Data: "JVBERi0=", Title: "report.pdf"},
	"document_untitled": DocumentBlock{MediaType: "text/plain", Data: "aGk="},
	"tool_result":       ToolResultBlock{ToolUseID: "toolu_01", Content: "exit status 2", IsError: true},
	"tool_use":          bashCall(),
	"tool_use_enriched": ToolUseBlock{
		ID:     "toolu_agent",
		Name:   string(ToolAgent),
		Input:  json.RawMessage(`{"prompt":"Find the call sites","description":"Search","subagentType":"general-purpose"}`),
		Result: json.RawMessage(`{"content":"3 call sites","isError":false}`),
		SubActivities: []SubActivity{
			{Type: SubActivityToolUse, Name: "Grep", Input: json.RawMessage(`{"pattern":"Parse\\("}`), Result: json.RawMessage(`"a.go:10"`)},
			{Type: SubActivityToolUse, Name: "Read", Input: json.RawMessage(`{"filePath":"a.go"}`)},
			{Type: SubActivityText, Text: "Found 3 call sites."},
		},
		SkillPrompt: "Use ripgrep.",
		Interrupted: true,
	},
	"unknown": UnknownBlock{Type: "thinking", Raw: json.RawMessage(`{"type":"thinking","thinking":"hmm","signature":"c2ln"}`)},
}

func chat(typ ChatEventType, data ChatData) ChatEvent {
	return ChatEvent{
		Type: typ, ChatSessionID: "chat-1", ProjectID: "proj-1", RunID: "run-1",
		Source: &SourceRef{Run: "run-1", Epoch: 2, Seq: 17}, Timestamp: t1, Data: data,
	}
}

var goldenChats = map[string]ChatEvent{
	"message": chat(ChatTypeMessage, ChatMessage{
		Message:      goldenOutputs["assistant"],
		MessageRowID: "row-9", ParentMessageRowID: "row-8",
		SenderID: "u-1", SenderName: "Ada", Engine: EngineClaudeCode,
		Usage: &TokenUsage{InputTokens: 1200, OutputTokens: 85},
	}),
	"message_first": chat(ChatTypeMessage, ChatMessage{
		Message: goldenOutputs["user"], MessageRowID: "row-1", SenderID: "u-1", SenderName: "Ada", Engine: EngineCodex,
	}),
	"partial_start":  chat(ChatTypePartial, ChatPartial{EventType: PartialStart, Reasoning: true}),
	"partial_update": chat(ChatTypePartial, ChatPartial{EventType: PartialUpdate, DeltaText: "Let me look at "}),
	"partial_end":    chat(ChatTypePartial, ChatPartial{EventType: PartialEnd}),
	"notification": chat(ChatTypeNotification, ChatNotification{
		Level: LevelWarning, Title: "MCP Server Connection Failed", Message: "broken: failed",
	}),
	"rate_limit": chat(ChatTypeRateLimit, ChatRateLimit{
		Engine: EngineClaudeCode, AccountID: "acc-1", Status: RateLimitAllowedWarning,
		Utilization: 0.92, ResetsAt: 1777777777, RateLimitType: RateLimitSevenDayOpus,
	}),
	"complete": chat(ChatTypeComplete, ChatComplete{
		StopReason: "end_turn", Usage: &TokenUsage{InputTokens: 5000, OutputTokens: 700}, TotalCostUSD: 0.0421, NumTurns: 3,
	}),
	"complete_empty": chat(ChatTypeComplete, ChatComplete{}),
	"error":          chat(ChatTypeError, ChatError{Error: "Claude Code is not logged in.", ErrorKind: KindAuth}),
	"cancelled":      chat(ChatTypeCancelled, ChatCancelled{}),
	"stream_finished": {
		Type: ChatTypeStreamFinished, ChatSessionID: "chat-1", ProjectID: "proj-1", Timestamp: t1,
		Data: ChatStreamFinished{ProjectID: "proj-1", ChatSessionID: "chat-1", Status: FinishLost, Reason: "lease-expired"},
	},
	"waiting_input": chat(ChatTypeWaitingInput, ChatWaitingInput{ProjectID: "proj-1", ChatSessionID: "chat-1", ToolUseID: "toolu_q"}),
	"run_state":     chat(ChatTypeRunState, ChatRunState{State: RunCancelling, Reason: "user"}),
	"messages_changed": {
		Type: ChatTypeMessagesChanged, ChatSessionID: "chat-1", Timestamp: t1,
		Data: ChatMessagesChanged{Reason: "rewind"},
	},
	"unknown": chat("chat:snapshot", ChatUnknown{Type: "chat:snapshot", Raw: json.RawMessage(`{"partialText":"a <b>","cursor":42}`)}),
}

var goldenEnvelope = Envelope{
	Tenant: "tenant-1", Run: "run-1", Session: "chat-1", Epoch: 2, Seq: 17,
	EmittedAt:   t1,
	TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	Output:      goldenOutputs["assistant"],
}
