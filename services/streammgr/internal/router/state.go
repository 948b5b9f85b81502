package router

import (
	"sort"

	"clopen.dev/pkg/events"
)

// state routes a run state transition; a terminal one ends the run: partial
// text of a stopped turn is saved as interrupted messages, tool calls that
// never got a result are marked interrupted, and clients and project members
// are told how the turn finished.
func (rt *routing) state(v events.RunState) {
	s := rt.s
	s.run.State = v.State
	rt.out.Run.State = v.State
	if v.State == events.RunClaimed {
		rt.out.Run.Claimed, rt.out.Run.WorkerID = true, v.Reason
	}
	if v.ArtifactRevision > 0 {
		rt.out.Run.ArtifactRevision = v.ArtifactRevision
	}
	if v.ReasoningEffort != nil {
		// The worker clamped the requested effort to the model: messages
		// are stamped with what the engine really ran with.
		s.run.Effort = *v.ReasoningEffort
		rt.out.Run.Effort = v.ReasoningEffort
	}
	runState := events.ChatRunState{State: v.State, Reason: v.Reason, Error: v.Error, ToolUseID: v.ToolUseID}
	if !v.State.Terminal() {
		rt.chat(runState)
	}
	if v.State == events.RunAwaitingInput && v.Reason == "permission" && v.ToolUseID != "" {
		w := events.ChatWaitingInput{ProjectID: s.run.ProjectID, ChatSessionID: s.run.SessionID, ToolUseID: v.ToolUseID}
		rt.chat(w)
		rt.notify(w)
	}
	if !v.State.Terminal() {
		return
	}
	rt.out.Terminal = v.State
	rt.out.Session.ClearActive = true
	rt.closeStreams()
	rt.out.Run.Error, rt.out.Run.ErrorKind = v.Error, v.ErrorKind
	rt.out.Run.MeteredUsage = v.MeteredUsage
	rt.out.Run.Snapshot = v.Snapshot
	finish := events.ChatStreamFinished{ProjectID: s.run.ProjectID, ChatSessionID: s.run.SessionID, Reason: v.Reason,
		Snapshot: v.Snapshot}
	switch v.State {
	case events.RunCompleted:
		rt.markInterrupted()
		done := events.ChatComplete{}
		if res := s.result; res != nil && !res.IsError() {
			u := res.Usage
			done = events.ChatComplete{StopReason: res.StopReason, Usage: &u, TotalCostUSD: res.TotalCostUSD, NumTurns: res.NumTurns}
		}
		if v.Reason == "interrupted" {
			done.StopReason = string(events.StopInterrupted)
		}
		rt.chat(done)
		finish.Status = events.FinishCompleted
	case events.RunFailed:
		rt.savePartials()
		rt.markInterrupted()
		detail := v.Error
		if detail == "" {
			detail = "the turn failed"
		}
		rt.save(events.AssistantMessage{MessageBase: rt.base(), Content: []events.Block{events.TextBlock{Text: "**Error:** " + detail}}})
		rt.chat(events.ChatError{Error: detail, ErrorKind: v.ErrorKind})
		finish.Status = events.FinishError
	case events.RunCancelled:
		rt.savePartials()
		rt.markInterrupted()
		rt.chat(events.ChatCancelled{})
		finish.Status = events.FinishCancelled
	case events.RunLost:
		rt.savePartials()
		rt.markInterrupted()
		msg := v.Error
		if msg == "" {
			msg = "the worker running this turn stopped responding"
		}
		rt.chat(events.ChatError{Error: msg, ErrorKind: events.KindCrashed})
		finish.Status = events.FinishLost
	}
	rt.chat(runState)
	rt.chat(finish)
	rt.notify(finish)
}

// closeStreams ends, for clients, the partial streams a run left open: a
// run that stops however it stops (cancelled, interrupted, failed, lost)
// never leaves a chat:partial start without its end.
func (rt *routing) closeStreams() {
	p := rt.s.partial
	if p.reasoningOpen {
		p.reasoningOpen = false
		rt.chat(events.ChatPartial{EventType: events.PartialEnd, Reasoning: true})
	}
	if p.textOpen {
		p.textOpen = false
		rt.chat(events.ChatPartial{EventType: events.PartialEnd})
	}
}

// savePartials keeps what a stopped turn had streamed: reasoning and text not
// yet saved become messages with no engine session (never a resume target),
// the text one with stop reason interrupted.
func (rt *routing) savePartials() {
	p := rt.s.partial
	if r := p.Reasoning(); r != "" {
		p.Fold(events.ReasoningMessage{})
		rt.save(events.ReasoningMessage{MessageBase: rt.base(), Text: r})
	}
	if t := p.Text(); t != "" {
		p.Fold(events.AssistantMessage{})
		rt.save(events.AssistantMessage{MessageBase: rt.base(), StopReason: events.StopInterrupted,
			Content: []events.Block{events.TextBlock{Text: t}}})
	}
}

// markInterrupted sets stop reason interrupted on assistant messages whose
// tool call never got a result.
func (rt *routing) markInterrupted() {
	s := rt.s
	seen := map[string]bool{}
	ids := make([]string, 0, len(s.openTools))
	for id := range s.openTools {
		ids = append(ids, id)
	}
	sort.Strings(ids) // a replay must produce the same chat events in the same order
	for _, id := range ids {
		sv := s.openTools[id]
		if seen[sv.rowID] {
			continue
		}
		seen[sv.rowID] = true
		sv.msg.StopReason = events.StopInterrupted
		rt.update(sv)
	}
	s.openTools = map[string]*saved{}
}

// base is the envelope of a message streammgr makes itself: deterministic
// ids, the engine type only, no engine session.
func (rt *routing) base() events.MessageBase {
	return events.MessageBase{CreatedAt: rt.env.EmittedAt, MessageID: RowID(rt.s.run.ID, rt.out.Epoch, rt.out.Seq, rt.rows),
		Engine: events.MessageEngine{Type: rt.s.run.Engine}}
}
