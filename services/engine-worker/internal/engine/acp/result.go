package acp

import (
	"cmp"
	"encoding/json"

	"clopen.dev/pkg/events"
)

// interruptedMsg is the error of a turn the user interrupted.
const interruptedMsg = "Interrupted by user"

// End ends the turn with the agent's prompt response: the open block goes
// out as its message, calls never emitted go out, and the result follows.
// end_turn and max_tokens are successes (with their stop reason);
// max_turn_requests is error_max_turns; cancelled is an interrupted turn;
// refusal and anything unknown fail the turn, saying why.
func (c *Converter) End(r PromptResponse) []events.Output {
	var stop events.StopReason
	switch r.StopReason {
	case StopEndTurn:
		stop = events.StopEndTurn
	case StopMaxTokens:
		stop = events.StopMaxTokens
	}
	out := append(c.closeStream(stop), c.emitPending()...)
	res := events.Result{SessionID: c.SessionID}
	if c.failure != "" && r.StopReason != StopCancelled {
		// The agent gave up on the model call and said so in a notice.
		res.Subtype, res.Errors = events.ResultErrorDuringExecution, []string{c.failure}
		return append(out, res)
	}
	switch r.StopReason {
	case StopEndTurn, StopMaxTokens, "":
		res.Subtype, res.StopReason = events.ResultSuccess, cmp.Or(r.StopReason, StopEndTurn)
		res.NumTurns, res.Usage = c.results+1, c.turnUsage(r)
		if c.cost != nil && *c.cost > c.CostBase {
			res.TotalCostUSD = *c.cost - c.CostBase
		}
	case StopMaxTurnRequests:
		res.Subtype, res.Errors = events.ResultErrorMaxTurns, []string{"The agent reached its limit of model requests for one turn"}
	case StopCancelled:
		res.Subtype, res.Errors = events.ResultErrorDuringExecution, []string{interruptedMsg}
	case StopRefusal:
		res.Subtype, res.Errors = events.ResultErrorDuringExecution, []string{"The agent refused to continue"}
	default:
		res.Subtype, res.Errors = events.ResultErrorDuringExecution, []string{"The agent ended the turn: " + r.StopReason}
	}
	return append(out, res)
}

// Failed ends a turn the agent failed (an error response to the prompt):
// the open block goes out and an error result carries msg.
func (c *Converter) Failed(msg string) []events.Output {
	out := c.closeStream("")
	return append(out, events.Result{Subtype: events.ResultErrorDuringExecution, SessionID: c.SessionID, Errors: []string{msg}})
}

// Interrupted ends an interrupted turn the agent did not end itself.
func (c *Converter) Interrupted() []events.Output {
	return c.Failed(interruptedMsg)
}

// Finish closes a stream left open (a turn that broke off).
func (c *Converter) Finish() []events.Output { return c.closeStream("") }

// Cost is the session's running cost as last reported, if any.
func (c *Converter) Cost() (float64, bool) {
	if c.cost == nil {
		return 0, false
	}
	return *c.cost, true
}

// turnUsage picks the turn's token usage: the prompt response's usage
// (Copilot, OpenCode), else Gemini's _meta.quota.token_count, else what
// Qwen reported per model call in its chunks' _meta.usage.
func (c *Converter) turnUsage(r PromptResponse) events.TokenUsage {
	if u := r.Usage; u != nil && (u.InputTokens > 0 || u.OutputTokens > 0) {
		return events.TokenUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens + u.ThoughtTokens,
			CacheReadInputTokens: u.CachedReadTokens, CacheCreationInputTokens: u.CachedWriteTokens}
	}
	var m struct {
		Quota struct {
			TokenCount *struct {
				InputTokens  int64 `json:"input_tokens"`
				OutputTokens int64 `json:"output_tokens"`
			} `json:"token_count"`
		} `json:"quota"`
	}
	if len(r.Meta) > 0 && json.Unmarshal(r.Meta, &m) == nil && m.Quota.TokenCount != nil {
		return events.TokenUsage{InputTokens: m.Quota.TokenCount.InputTokens, OutputTokens: m.Quota.TokenCount.OutputTokens}
	}
	return c.usage
}

// SetUsage gives the turn's usage and the session's running cost from a
// source outside the protocol (an agent's session files).
func (c *Converter) SetUsage(u events.TokenUsage, sessionCost float64) {
	c.usage = u
	if sessionCost > 0 {
		c.cost = &sessionCost
	}
}

// addMetaUsage adds a chunk's _meta.usage (Qwen: one per model call).
func (c *Converter) addMetaUsage(meta json.RawMessage) {
	if len(meta) == 0 {
		return
	}
	var m struct {
		Usage *PromptUsage `json:"usage"`
	}
	if json.Unmarshal(meta, &m) != nil || m.Usage == nil {
		return
	}
	c.usage = c.usage.Add(events.TokenUsage{InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens + m.Usage.ThoughtTokens,
		CacheReadInputTokens: m.Usage.CachedReadTokens, CacheCreationInputTokens: m.Usage.CachedWriteTokens})
}
