package router

import (
	"fmt"
	"regexp"
	"strings"

	"clopen.dev/pkg/events"
)

// Route routes one envelope of the run. An envelope whose Seq is 0 was
// written by streammgr itself (a cancel nobody could deliver, a lost lease):
// it takes the next seq of the run's current epoch.
func (s *State) Route(env events.Envelope) Outcome {
	r := &s.run
	switch {
	case r.State.Terminal():
		return Outcome{DropReason: "run already ended"}
	case env.Epoch != 0 && env.Epoch < r.Epoch:
		return Outcome{DropReason: fmt.Sprintf("stale epoch %d < %d", env.Epoch, r.Epoch)}
	}
	if env.Epoch > r.Epoch {
		r.Epoch, r.LastSeq = env.Epoch, 0 // a new owner
	}
	if env.Seq == 0 {
		env.Epoch, env.Seq = r.Epoch, r.LastSeq+1
	}
	out := Outcome{Epoch: env.Epoch, Seq: env.Seq, Store: true, At: env.EmittedAt}
	if env.Seq <= r.LastSeq {
		return out // already routed: store (idempotently), route nothing twice
	}
	r.LastSeq = env.Seq
	out.Run.Epoch, out.Run.LastSeq = r.Epoch, r.LastSeq
	rt := routing{s: s, env: env, out: &out}
	rt.route()
	return out
}

// routing is one Route call in progress.
type routing struct {
	s    *State
	env  events.Envelope
	out  *Outcome
	rows int
}

func (rt *routing) route() {
	s, o := rt.s, rt.env.Output
	if sid := events.SessionIDOf(o); sid != "" && !s.run.EngineSessionKnown {
		s.run.EngineSessionKnown = true
		rt.out.Run.EngineSession = sid
		rt.out.Session.HeadSessionID = sid
	}
	switch o.(type) {
	case events.RunState, events.RunUsage: // the worker's, not the engine's output
	default:
		rt.out.Run.FirstOutput = true
	}
	switch v := o.(type) {
	case events.SystemInit:
		for _, m := range v.MCPServers {
			if st := events.NormalizeMCPStatus(string(m.Status)); st != events.MCPConnected && !st.Soft() {
				rt.chat(events.ChatNotification{Level: events.LevelWarning, Title: "MCP Server Connection Failed",
					Message: fmt.Sprintf("%s: %s", m.Name, st)})
			}
		}
	case events.StreamEvent:
		rt.stream(v)
	case events.ReasoningMessage:
		s.partial.Fold(v)
		rt.save(v)
	case events.AssistantMessage:
		rt.assistant(v)
	case events.UserMessage:
		s.lastIsAssistant = false
		for _, b := range v.Content {
			if tr, ok := b.(events.ToolResultBlock); ok {
				delete(s.openTools, tr.ToolUseID)
			}
		}
		rt.save(v)
	case events.CompactBoundary:
		rt.save(v)
	case events.RateLimit:
		data := events.ChatRateLimit{Engine: s.run.Engine, AccountID: s.run.AccountID, Status: v.Status,
			Utilization: v.Utilization, ResetsAt: v.ResetsAt, RateLimitType: v.RateLimitType}
		rt.out.RateLimit = &RateLimit{Engine: s.run.Engine, AccountID: s.run.AccountID, Data: data}
		rt.chat(data)
	case events.Notification:
		rt.chat(events.ChatNotification{Level: v.Level, Title: v.Title, Message: v.Message})
	case events.Result:
		s.result = &v
		rt.result(v)
	case events.RunState:
		rt.state(v)
	case events.RunUsage:
		rt.out.Run.Live = &v // no chat event: clients get the usage with the turn's end
	}
}

func (rt *routing) stream(v events.StreamEvent) {
	rt.s.partial.Fold(v)
	switch v.Event {
	case events.StreamStart:
		rt.chat(events.ChatPartial{EventType: events.PartialStart, Reasoning: v.Reasoning})
	case events.StreamDelta:
		rt.chat(events.ChatPartial{EventType: events.PartialUpdate, DeltaText: v.Text, Reasoning: v.Reasoning})
	case events.StreamStop:
		rt.chat(events.ChatPartial{EventType: events.PartialEnd, Reasoning: v.Reasoning})
	}
}

func (rt *routing) assistant(v events.AssistantMessage) {
	s := rt.s
	text := textOf(v.Content)
	if s.lastIsAssistant && text != "" && text == s.lastText && !hasToolUse(v.Content) {
		return // the engine repeated its last message
	}
	s.lastIsAssistant, s.lastText = true, text
	s.partial.Fold(v)
	row := rt.save(v)
	sv := &saved{rowID: row, msg: rt.enrich(v).(events.AssistantMessage)}
	s.lastAssistant = sv
	if v.Usage == nil {
		s.noUsage = append(s.noUsage, sv)
	}
	for _, b := range v.Content {
		tu, ok := b.(events.ToolUseBlock)
		if !ok {
			continue
		}
		s.openTools[tu.ID] = sv
		if tu.Name == string(events.ToolAskUserQuestion) && v.Parent.ToolUseID == "" {
			w := events.ChatWaitingInput{ProjectID: s.run.ProjectID, ChatSessionID: s.run.SessionID, ToolUseID: tu.ID}
			rt.chat(w)
			rt.notify(w)
		}
	}
	if text != "" {
		sum := summary(text)
		rt.out.Session.Summary = &sum
	}
}

// result records the turn's usage; a success's stop reason is written back
// into the last assistant message when the engine left it null, and engines
// that report usage only per turn get it on every message of the turn.
func (rt *routing) result(v events.Result) {
	s := rt.s
	if v.IsError() {
		rt.out.Run.Error = strings.Join(v.Errors, "; ")
		return
	}
	usage, cost, turns := v.Usage, v.TotalCostUSD, v.NumTurns
	rt.out.Run.Usage, rt.out.Run.CostUSD, rt.out.Run.NumTurns = &usage, &cost, &turns
	var changed []*saved // each rewritten message is written once
	mark := func(sv *saved) {
		for _, c := range changed {
			if c == sv {
				return
			}
		}
		changed = append(changed, sv)
	}
	if s.run.Engine == events.EngineCodex || s.run.Engine == events.EngineCursor {
		for _, sv := range s.noUsage {
			u := usage
			sv.msg.Usage = &u
			mark(sv)
		}
	}
	s.noUsage = nil
	if la := s.lastAssistant; la != nil && la.msg.StopReason == "" && v.StopReason != "" {
		la.msg.StopReason = events.StopReason(v.StopReason)
		if !la.msg.StopReason.Valid() {
			la.msg.StopReason = events.StopEndTurn
		}
		mark(la)
	}
	for _, sv := range changed {
		rt.update(sv)
	}
}

// update rewrites a saved message's row. Clients are not sent it again:
// each message reaches them once, and what a rewrite adds (the turn's stop
// reason and usage, an interrupted tool call) comes with the chat:complete,
// chat:cancelled or chat:error that follows, and with the rows on reload.
func (rt *routing) update(sv *saved) {
	rt.out.Updates = append(rt.out.Updates, Update{RowID: sv.rowID, Output: sv.msg})
}

// save appends a persisted message to the DAG (parent = HEAD) and tells clients.
func (rt *routing) save(o events.Output) string {
	s := rt.s
	o = rt.enrich(o)
	row := RowID(s.run.ID, rt.out.Epoch, rt.out.Seq, rt.rows)
	rt.rows++
	at := rt.env.EmittedAt
	rt.out.Inserts = append(rt.out.Inserts, Message{RowID: row, ParentRowID: s.run.Head, Output: o, CreatedAt: at})
	msg := events.ChatMessage{Message: o, MessageRowID: row, ParentMessageRowID: s.run.Head,
		SenderID: string(s.run.Engine), SenderName: string(s.run.Engine), Engine: s.run.Engine}
	if a, ok := o.(events.AssistantMessage); ok {
		msg.Usage = a.Usage
	}
	rt.chat(msg)
	s.run.Head = row
	rt.out.Session.Head = row
	rt.out.Session.AddMessages++
	rt.out.Session.LastMessageAt = &at
	return row
}

// enrich stamps the account, model name and reasoning effort the run used.
func (rt *routing) enrich(o events.Output) events.Output {
	r := rt.s.run
	stamp := func(e *events.MessageEngine) {
		if r.ModelName != "" {
			e.Model.Name = r.ModelName
		}
		if e.Type == "" {
			e.Type = r.Engine
		}
		e.Account = events.AccountRef{ID: r.AccountID, Name: r.AccountName}
		e.ReasoningEffort = r.Effort
	}
	switch v := o.(type) {
	case events.AssistantMessage:
		stamp(&v.Engine)
		return v
	case events.ReasoningMessage:
		stamp(&v.Engine)
		return v
	case events.UserMessage:
		stamp(&v.Engine)
		return v
	case events.CompactBoundary:
		stamp(&v.Engine)
		return v
	}
	return o
}

func (rt *routing) chat(d events.ChatData) {
	rt.out.Chat = append(rt.out.Chat, rt.event(d))
}

func (rt *routing) notify(d events.ChatData) {
	rt.out.Notify = append(rt.out.Notify, rt.event(d))
}

func (rt *routing) event(d events.ChatData) events.ChatEvent {
	src := rt.env.Source()
	src.Epoch, src.Seq = rt.out.Epoch, rt.out.Seq
	return events.ChatEvent{Type: d.ChatType(), ChatSessionID: rt.s.run.SessionID, ProjectID: rt.s.run.ProjectID,
		RunID: rt.s.run.ID, Source: &src, Timestamp: rt.env.EmittedAt, Data: d}
}

func textOf(blocks []events.Block) string {
	var b strings.Builder
	for _, bl := range blocks {
		if t, ok := bl.(events.TextBlock); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func hasToolUse(blocks []events.Block) bool {
	for _, bl := range blocks {
		if _, ok := bl.(events.ToolUseBlock); ok {
			return true
		}
	}
	return false
}

var fences = regexp.MustCompile("(?s)```.*?(```|$)")

// summary is the session's head summary: 200 characters of the answer with
// code fences stripped.
func summary(text string) string {
	return truncate(strings.Join(strings.Fields(fences.ReplaceAllString(text, " ")), " "), 200)
}

// Title is a session's head title: 80 characters of the user's text.
func Title(text string) string { return truncate(strings.Join(strings.Fields(text), " "), 80) }

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
